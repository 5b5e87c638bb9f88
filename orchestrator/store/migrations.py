"""Versioned schema. Append a new entry to migrate; never edit a shipped one.

``PRAGMA user_version`` records how many entries have been applied.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: the skeleton
    """
    CREATE TABLE sessions (
        key      TEXT PRIMARY KEY,
        channel  TEXT NOT NULL,
        chat     TEXT NOT NULL,
        state    TEXT NOT NULL,
        data     TEXT NOT NULL DEFAULT '{}',
        updated  REAL NOT NULL
    );
    CREATE TABLE inbound (
        channel    TEXT NOT NULL,
        message_id TEXT NOT NULL,
        session    TEXT NOT NULL,
        payload    TEXT NOT NULL,
        status     TEXT NOT NULL,          -- queued | done
        received   REAL NOT NULL,
        PRIMARY KEY (channel, message_id)
    );
    CREATE INDEX inbound_status ON inbound(status, received);
    CREATE TABLE messages (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        direction   TEXT NOT NULL,         -- in | out
        text        TEXT NOT NULL,
        ts          REAL NOT NULL,
        model       TEXT,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX messages_session ON messages(session, id);
    CREATE TABLE tasks (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        repo        TEXT NOT NULL,
        prompt      TEXT NOT NULL,
        harness     TEXT NOT NULL,
        -- running | proposed | committed | rejected | expired | failed | stopped | empty
        -- | interrupted
        status      TEXT NOT NULL,
        created     REAL NOT NULL,
        finished    REAL,
        result      TEXT,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0,
        cost_usd    REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE approvals (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        task_id     INTEGER NOT NULL REFERENCES tasks(id),
        repo        TEXT NOT NULL,
        nonce       TEXT NOT NULL,
        diff_hash   TEXT NOT NULL,
        base_sha    TEXT NOT NULL,
        owner       TEXT NOT NULL,
        status      TEXT NOT NULL,         -- pending | approved | rejected | expired | superseded
        created     REAL NOT NULL,
        expires_at  REAL NOT NULL,
        decided     REAL
    );
    CREATE TABLE commits (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        repo        TEXT NOT NULL,
        sha         TEXT NOT NULL,
        parent      TEXT NOT NULL,
        task_id     INTEGER,
        summary     TEXT NOT NULL,
        created     REAL NOT NULL,
        undone_by   TEXT
    );
    """,
    # 2: /status sums tokens per session; only rows that carry tokens are indexed.
    """
    CREATE INDEX messages_tokens ON messages(session) WHERE tokens_in > 0 OR tokens_out > 0;
    """,
    # 3: the test commands a harness ran, for the completion message.
    """
    ALTER TABLE tasks ADD COLUMN checks TEXT NOT NULL DEFAULT '[]';
    """,
    # 4: the scheduler: jobs, one run row per (job, slot), misses kept as runs too.
    """
    CREATE TABLE jobs (
        id          INTEGER PRIMARY KEY,
        kind        TEXT NOT NULL,         -- reminder | prompt
        text        TEXT NOT NULL,         -- the reminder, or the self-contained prompt
        channel     TEXT NOT NULL,         -- where it answers (the owner's chat)
        chat        TEXT NOT NULL,
        cron        TEXT,                  -- five-field expression, NULL for one-shots
        tz          TEXT NOT NULL,
        spec        TEXT NOT NULL,         -- what the owner typed for the time, for /cron list
        missed      TEXT NOT NULL,         -- run_once | skip
        status      TEXT NOT NULL,         -- active | paused | done | failed | cancelled
        next_at     REAL,                  -- the next slot (UTC seconds), NULL when none
        created     REAL NOT NULL,
        updated     REAL NOT NULL
    );
    CREATE INDEX jobs_due ON jobs(next_at) WHERE status = 'active';
    CREATE TABLE job_runs (
        id          INTEGER PRIMARY KEY,
        job_id      INTEGER NOT NULL REFERENCES jobs(id),
        slot        REAL NOT NULL,
        -- claimed | delivering | retry | done | failed | missed | interrupted
        status      TEXT NOT NULL,
        attempt     INTEGER NOT NULL DEFAULT 0,
        holder      TEXT,                  -- the process token holding the lease
        lease_until REAL,
        next_try    REAL,
        claimed_at  REAL,
        finished_at REAL,
        error       TEXT,
        late        INTEGER NOT NULL DEFAULT 0,  -- 1: fired after the process was down
        reported    INTEGER NOT NULL DEFAULT 0,  -- 1: the owner was told (misses, failures)
        UNIQUE (job_id, slot)
    );
    CREATE INDEX job_runs_open ON job_runs(status, lease_until)
        WHERE status IN ('claimed', 'delivering', 'retry');
    CREATE INDEX job_runs_unreported ON job_runs(job_id) WHERE reported = 0
        AND status IN ('missed', 'interrupted', 'failed');
    """,  # 5: who may do what (orchestrator/permissions/): the owner's grants, and who each
    # task and commit was for ("owner", a member's name, or the sender's "channel:id"),
    # so /undo never reverts a commit made for someone else.
    """
    CREATE TABLE grants (
        id          INTEGER PRIMARY KEY,
        subject     TEXT NOT NULL,
        action      TEXT NOT NULL,         -- an action pattern (tool:memory_*, approve)
        scope       TEXT NOT NULL,         -- once | session | persisted
        session     TEXT,                  -- once/session grants: the chat
        granted_by  TEXT NOT NULL,
        created     REAL NOT NULL,
        revoked     REAL
    );
    CREATE INDEX grants_live ON grants(subject) WHERE revoked IS NULL;
    ALTER TABLE tasks ADD COLUMN requester TEXT NOT NULL DEFAULT 'owner';
    ALTER TABLE commits ADD COLUMN requester TEXT NOT NULL DEFAULT 'owner';
    """,
    # 6: the git journal (orchestrator/task/recovery.py). An intent is written before Fetch
    # moves a repository's ref (a commit on "yes", a revert on /undo) and closed in the
    # same transaction as the rows that record the move; one still open at start-up is
    # settled from git, so a kill between the ref and the database loses nothing.
    """
    CREATE TABLE intents (
        id          INTEGER PRIMARY KEY,
        kind        TEXT NOT NULL,         -- commit | undo
        session     TEXT NOT NULL,
        repo        TEXT NOT NULL,
        target      INTEGER NOT NULL,      -- commit: the approval id, undo: the commits row
        base        TEXT NOT NULL,         -- the HEAD the ref moves from (the new parent)
        tree        TEXT NOT NULL,         -- commit: the approved tree, undo: ''
        message     TEXT NOT NULL,         -- the new commit's message, exactly
        status      TEXT NOT NULL,         -- open | done | void
        created     REAL NOT NULL
    );
    CREATE INDEX intents_open ON intents(id) WHERE status = 'open';
    """,
    # 7: the owner's open permission questions (orchestrator/permissions/asks.py), so a
    # restart does not forget them: "/grants yes <nonce>" still answers one afterwards,
    # and one answered too late is told apart from one never asked.
    """
    CREATE TABLE asks (
        nonce       TEXT PRIMARY KEY,
        subject     TEXT NOT NULL,
        action      TEXT NOT NULL,
        channel     TEXT NOT NULL,         -- the chat the request came from
        chat        TEXT NOT NULL,
        created     REAL NOT NULL,
        expires     REAL NOT NULL
    );
    """,
    # 8: memory blocks (orchestrator/blocks/): persona, owner and one per project, always
    # in the model's prompt. Every change is a numbered version with its author and time
    # (a revert too), so any version can be brought back. ``blocks`` points at each
    # block's current version.
    """
    CREATE TABLE block_versions (
        id          INTEGER PRIMARY KEY,
        kind        TEXT NOT NULL,         -- persona | owner | project
        scope       TEXT NOT NULL,         -- '' or, for a project block, the repo's name
        number      INTEGER NOT NULL,      -- 1, 2, ... per block
        text        TEXT NOT NULL,
        author      TEXT NOT NULL,         -- owner, a member, or 'fetch for <subject>'
        change      TEXT NOT NULL,         -- set | append | clear | revert
        at          REAL NOT NULL,
        restored    INTEGER,               -- a revert: the number whose text it restored
        UNIQUE (kind, scope, number)
    );
    CREATE TABLE blocks (
        kind        TEXT NOT NULL,
        scope       TEXT NOT NULL,
        version     INTEGER NOT NULL,      -- block_versions.number of the current text
        updated     REAL NOT NULL,
        PRIMARY KEY (kind, scope)
    );
    """,
    # 9: every model call Fetch pays for, one row each: the orchestrator's own calls
    # (planner, summaries, embeddings) and the harnesses' calls seen by the relay. The
    # cost ledger (budgets, /cost) and the dashboard read it; ``cost`` is in USD.
    """
    CREATE TABLE usage (
        id          INTEGER PRIMARY KEY,
        at          REAL NOT NULL,
        source      TEXT NOT NULL,         -- orchestrator | relay | embed | summarize
        session     TEXT NOT NULL DEFAULT '',  -- key_str of the chat, '' for none
        message     INTEGER,               -- messages.id of the inbound it served
        task        INTEGER,               -- tasks.id when the call served a task
        provider    TEXT NOT NULL DEFAULT '',
        model       TEXT NOT NULL DEFAULT '',
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0,
        cost        REAL NOT NULL DEFAULT 0,
        latency_ms  REAL NOT NULL DEFAULT 0,
        status      INTEGER NOT NULL DEFAULT 200,  -- HTTP status, 0 when none came
        error       TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX usage_at ON usage(at);
    CREATE INDEX usage_task ON usage(task) WHERE task IS NOT NULL;
    CREATE INDEX usage_session ON usage(session, at);
    """,
    # 10: self-improvement (orchestrator/improve/): one row per /improve run, its
    # branch on Fetch's own repository and the pull request it opened. ``pr_state`` is
    # what GitHub last said (open, closed, merged), refreshed by /prs: the outcome is
    # remembered. Fetch never merges, so nothing here ever moves a branch.
    """
    CREATE TABLE improvements (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,         -- key_str of the chat that asked
        requester   TEXT NOT NULL,
        request     TEXT NOT NULL,         -- what to improve, as asked
        repo        TEXT NOT NULL,         -- owner/name on GitHub
        base        TEXT NOT NULL DEFAULT '',
        branch      TEXT NOT NULL DEFAULT '',  -- fetch/improve-<id>-<slug>
        head_sha    TEXT NOT NULL DEFAULT '',
        status      TEXT NOT NULL,         -- running, proposed, empty, failed, stopped
        tests       TEXT NOT NULL DEFAULT '',  -- the test result line
        detail      TEXT NOT NULL DEFAULT '',  -- why it failed, or what was left behind
        pr_number   INTEGER,
        pr_url      TEXT NOT NULL DEFAULT '',
        pr_state    TEXT NOT NULL DEFAULT '',  -- open, closed, merged (GitHub's word)
        created     REAL NOT NULL,
        updated     REAL NOT NULL
    );
    CREATE INDEX improvements_open ON improvements(id) WHERE pr_state = 'open';
    """,
    # 11: the tree a task's change was made into from its layer's data
    # (orchestrator/boundary/): the diff is read and committed from git objects.
    """
    ALTER TABLE approvals ADD COLUMN tree_sha TEXT NOT NULL DEFAULT '';
    """,
    # 12: who asked. A job runs with its creator's authority (``owner``, or the sender's
    # id on the job's channel, e.g. a member's number), and the message log keeps who
    # said each line (a subject id: ``owner``, a member's name, an allowlist entry).
    """
    ALTER TABLE jobs ADD COLUMN creator TEXT NOT NULL DEFAULT 'owner';
    ALTER TABLE messages ADD COLUMN sender TEXT NOT NULL DEFAULT '';
    """,
    # 13: exactly once (orchestrator/store/once.py): the message whose command opened
    # an intent (a /undo; empty for a yes or a task's own commit), so settling the
    # intent, live or at the next start, closes that message's inbound row with it and
    # a replay can never revert a second commit for one message.
    """
    ALTER TABLE intents ADD COLUMN in_channel TEXT NOT NULL DEFAULT '';
    ALTER TABLE intents ADD COLUMN in_message TEXT NOT NULL DEFAULT '';
    """,
    # 14: the durable outbox (orchestrator/store/outbox.py). A notice about what a
    # crash left waits here (``sent`` NULL) until its channel has started; the web
    # chat's replies are kept here (``event``: the page's event as JSON), so what was
    # said while no page was open is still there after a restart.
    """
    CREATE TABLE outbox (
        id        INTEGER PRIMARY KEY,
        channel   TEXT NOT NULL,
        chat      TEXT NOT NULL,
        text      TEXT NOT NULL,
        event     TEXT NOT NULL DEFAULT '',  -- the web chat's event, '' for a notice
        created   REAL NOT NULL,
        sent      REAL,                      -- NULL: waits for its channel to start
        attempts  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX outbox_waiting ON outbox(channel, id) WHERE sent IS NULL;
    CREATE INDEX outbox_chat ON outbox(channel, chat, id);
    """,
    # 15: one conversation across devices (/link, orchestrator/links.py). A device's chat
    # (the web chat, the terminal) joined to the owner's WhatsApp or Telegram chat: its
    # messages run in that chat's session. A code shown in one chat, typed in the other:
    # only its hash is kept, with its expiry; used once.
    """
    CREATE TABLE links (
        device_channel TEXT NOT NULL,
        device_chat    TEXT NOT NULL,
        home_channel   TEXT NOT NULL,
        home_chat      TEXT NOT NULL,
        created        REAL NOT NULL,
        PRIMARY KEY (device_channel, device_chat)
    );
    CREATE TABLE link_codes (
        code_hash TEXT PRIMARY KEY,
        channel   TEXT NOT NULL,
        chat      TEXT NOT NULL,
        expires   REAL NOT NULL,
        used      REAL
    );
    """,
    # 16: which process accepted a queued message (the store on PostgreSQL, where several
    # share one database): a starting process replays only its own rows and those of
    # processes that are gone, never a live one's (orchestrator/store/inbox.py). '' on
    # SQLite, where one process owns the file.
    """
    ALTER TABLE inbound ADD COLUMN holder TEXT NOT NULL DEFAULT '';
    """,
    # 17: a held notice is claimed before it is sent (orchestrator/store/outbox.py):
    # ``claimed`` is when, so two processes on one PostgreSQL database never send the
    # same notice, and a claim a killed process left runs out after a lease.
    """
    ALTER TABLE outbox ADD COLUMN claimed REAL;
    """,
    # 18: which process ran a task (the store on PostgreSQL, where several share one
    # database): a task cut short by a process that died is recovered by a live one,
    # once (orchestrator/store/work.py, adopt_tasks). '' on SQLite.
    """
    ALTER TABLE tasks ADD COLUMN holder TEXT NOT NULL DEFAULT '';
    """,
    # 19: the running tasks by holder, what every live process on PostgreSQL looks up
    # every few seconds for a dead one's (orchestrator/store/processes.py).
    """
    CREATE INDEX tasks_running ON tasks(holder) WHERE status = 'running';
    """,
)
