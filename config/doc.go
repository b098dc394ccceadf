// Package config reads and checks the one YAML file that configures a
// throttler worker.
//
// Load reads a file and Parse reads bytes; both decode strictly (a field
// the schema does not know is an error, with the known field it likely
// misspells), fill in defaults and validate, and return every problem at
// once, in one pass (values of the wrong type, unknown fields, required
// fields left out, every rule broken), as a Problems error that wraps
// ErrInvalid. Each Problem names the field by its YAML path
// ("budgets[2].end") and, when the config came from YAML, the line it is
// on.
//
// A complete file, with the defaults of the optional fields:
//
//	brokers: [127.0.0.1:9092]            # required, host:port each
//	security:                            # optional: TLS and SASL for every Kafka connection
//	  tls:
//	    enabled: true                      # default false; any other tls field turns it on too
//	    ca_file: ca.pem                    # default: the system's roots
//	    cert_file: client.pem              # client certificate and key, both or neither
//	    key_file: client.key
//	    server_name: kafka.example.com     # default: the dialled host
//	    insecure_skip_verify: false        # tests only
//	  sasl:
//	    mechanism: SCRAM-SHA-512           # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
//	    username: throttler
//	    password_file: /run/secrets/kafka  # or password: …, or password_env: VAR (exactly one)
//	group: throttler                     # consumer group (default "throttler")
//	topics:
//	  input: [events]                    # required, one or more
//	  rewards: [clicks]                  # optional reward (click, conversion) topics
//	  output: passed                     # required
//	  rejected: rejected                 # optional; empty = drop rejected events and count them
//	  dead_letter: throttler.dead-letter # default "<group>.dead-letter"
//	  stats: throttler.stats             # default "<group>.stats": counters (each partition's ledger) and definitions
//	  caps: throttler.caps               # the caps' changelog; default "<group>.caps"
//	  control: throttler.changes         # default "<group>.changes": budget changes at run time
//	  partitions: 12                     # for topics created on start; default 0 = as many as the input, else 12
//	delivery: exactly-once               # or at-least-once (default exactly-once)
//	group_protocol: classic              # or consumer (KIP-848; default classic)
//	sync_interval: 1s                    # counter exchange period, at least 10ms (default 1s)
//	commit_interval: 100ms               # how often a transaction or commit closes (default 100ms)
//	fields:                              # dot-separated JSON paths into each event
//	  budget: campaign                   # required: names the event's budget
//	  key: user                          # optional; default: the record key
//	  id: id                             # optional
//	  score: score                       # optional; or score_expr, not both
//	  score_expr: "score * 2"            # optional expression over fields
//	  time: ts                           # optional; default: the record timestamp
//	dedup_window: 10000                  # optional: dead-letter an id repeated within the last N ids of its partition (needs fields.id; default 0 = off)
//	rewards:                             # required when topics.rewards is set
//	  budget: campaign                   # path in reward events naming the budget
//	  value: value                       # optional; default: each reward counts 1
//	  max_value: 1000                    # optional: a larger reward is dead-lettered (default 1e6)
//	budgets:                             # at least one
//	  - name: campaign-a                 # required, unique
//	    target: 12000                    # required, > 0
//	    begin: 2026-11-22T10:00:00Z      # RFC 3339; begin and end, or period
//	    end: 2026-11-22T11:00:00Z
//	    reserve: 30s                     # finish this long before end (default 0)
//	    kind: passes                     # passes or rewards (default passes)
//	    conversion: 0.02                 # rewards only, optional: rewards per pass expected
//	    reward_delay: 15s                # rewards only, optional: how long after a pass
//	    scored: false                    # highest scores pass first (default false)
//	    parent: account                  # optional: another budget's name
//	  - name: account
//	    target: 1000
//	    period: 1m                       # at most target per period
//	    action: reject                   # reject or delay (default reject); delay:
//	                                     # pause the partition until the next period
//	budgets_file: budgets.jsonl          # optional: more budgets, one JSON object a line, appended to budgets
//	                                     # (ReadBudgets; relative to this file's directory)
//	caps:                                # optional per-key frequency caps (GCRA)
//	  - name: per-user                   # required, unique, not a budget's name
//	    key: user                        # optional; default: fields.key
//	    burst: 2                         # burst+1 at once (default 0)
//	    rate: 3/1h                       # required: count/period on average
//	    quantity: items                  # optional path of what an event costs; default 1
//	layers: []                           # experiments: see splitter.Layer; hash schemes in docs/assignment.md
//	http:                                # metrics and health (docs/operations.md, HTTP endpoints)
//	  listen: 127.0.0.1:9090             # default: loopback only
//	  allowed_hosts: [w1.internal]       # optional: names it is reached by, besides IPs and localhost
//	  tls: {cert_file: c, key_file: k}   # optional: HTTPS only
//	  auth: {token_file: f}              # optional: /metrics needs a bearer token (token_env; user with password_file/password_env)
//	  budget_series: 1000                # budgets with per-budget series, at most (default 1000); the others count under budget=""
//	log: {format: json, level: info}     # json or console; trace, debug, info, warn, error
//	timeouts:                            # optional; 0 or absent: the client's default
//	  session: 6s                        # group session (default 45s): a dead worker's partitions move after it
//	  rebalance: 10s                     # how long a rebalance waits for members (default 60s)
//	  heartbeat: 500ms                   # below session (default 3s)
//	  transaction: 10s                   # above commit_interval (default 40s): how long a dead worker's open transaction blocks readers
package config
