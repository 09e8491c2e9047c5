"""Words for the synthetic memories of the sync, merge and import benches (one list, so
their figures stay comparable)."""

WORDS = (
    "deploy",
    "cache",
    "schema",
    "index",
    "retry",
    "queue",
    "worker",
    "token",
    "vendor",
    "build",
    "release",
    "migration",
    "latency",
    "budget",
    "alert",
    "rollback",
    "feature",
    "flag",
    "shard",
    "replica",
    "backup",
    "vault",
    "proxy",
    "gateway",
)
