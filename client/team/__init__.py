"""Team membership: session, admin operations, invites, identity, names."""
