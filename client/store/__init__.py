"""Local store: SQLite file, migrations, rows, writes, export/import, health."""
