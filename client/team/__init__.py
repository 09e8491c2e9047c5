"""Team membership: creating a team, admin operations, invites and join requests, joining."""
