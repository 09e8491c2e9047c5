"""Agent hosts: install sealmem into Claude Code, Codex, Cursor, Windsurf; session hooks."""
