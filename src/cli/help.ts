/*
 * What the CLI prints about itself: its usage texts, and how it stops on bad arguments.
 */

export const HELP: Record<string, string> = {
  main: `Usage: switchboard [command] [options]

Commands:
  serve                 Serve the API (default). Configuration comes from the environment:
                        SWITCHBOARD_HOST, SWITCHBOARD_PORT, SWITCHBOARD_DATA_DIR, DATABASE_URL, ...
  migrate               Apply pending database migrations and exit
  keys create           Create an API key and print it once
  keys list             List API keys
  keys revoke KEY_ID    Revoke an API key
  users create|list|disable|enable  Manage users (people: they sign in and decide human steps)
  groups add|remove|list  Grant, remove and list group memberships (who reads group shares)
  audit verify          Verify the audit log's hash chain (exit 1 when it is broken)
  blobs migrate         Move artifact contents from <data dir>/blobs into PostgreSQL
  mcp                   Serve the MCP tools over stdio, proxying to a running server

Options:
  -h, --help            Print this help ('switchboard COMMAND --help': a command's options)
  -v, --version         Print the version and exit`,
  serve: `Usage: switchboard serve [--host HOST] [--port PORT] [--data-dir DIR]

Serves the whole API. Flags override SWITCHBOARD_HOST, SWITCHBOARD_PORT and SWITCHBOARD_DATA_DIR.
SIGTERM or SIGINT drains in-flight requests, stops workers and exits 0; a second one, a
second or more later, exits at once with 128 + the signal's number (143 for SIGTERM).
On SQLite it holds <data dir>/switchboard.lock while it runs: a second server on the same data
directory exits 1 at start (the lock goes with the process, however it ends).`,
  migrate: `Usage: switchboard migrate

Applies pending migrations to the configured database (DATABASE_URL, else SQLite in the data dir).`,
  keys: `Usage:
  switchboard keys create --agent ID [--role agent|admin] [--scopes a,b] [--expires 30d] [--name NAME] [--create]
  switchboard keys create --role admin|operator|approver|viewer [--scopes a,b] [--expires 30d] [--name NAME] [--create]

--scopes narrows the role to these permissions (see GET /api/v1/auth/permissions); --expires
takes a duration (90m, 12h, 30d) or an ISO 8601 time, after which the key is refused (401).
  switchboard keys list [--all]
  switchboard keys revoke KEY_ID

Works directly on the configured database (DATABASE_URL, else SWITCHBOARD_DATA_DIR, default
./data), which it names on stderr; the server need not be running, and a running server sees
a revocation on its next request. It refuses a database Switchboard never used unless given
--create, so that a wrong directory does not get a new empty database.`,
  users: `Usage:
  switchboard users create --username U --role admin|operator|approver|viewer [--display-name NAME] [--password-stdin] [--create]
  switchboard users list
  switchboard users disable U     Its sessions end and its keys are refused, at once
  switchboard users enable U

create prints the user and a generated password, shown once; with --password-stdin it reads
the password (at least 12 characters) from stdin instead and prints none. Works directly on
the configured database, as 'keys' does; a running server sees a change on its next request.`,
  groups: `Usage:
  switchboard groups add GROUP AGENT_ID      Make the agent a member of the group
  switchboard groups remove GROUP AGENT_ID   Remove it (exit 1 when it was not a member)
  switchboard groups list [GROUP]            List the groups and their members, or one group's memberships

A share of an artifact with a group opens to the members granted here (or through
PUT /api/v1/auth/groups/{group}/members/{agent_id} with an admin key), never to the groups
agents declare on their capabilities, which only route. Works directly on the configured
database, as 'keys' does; a running server sees a change on its next request.`,
  audit: `Usage: switchboard audit verify

Walks the audit log of the configured database (DATABASE_URL, else SQLite in the data dir) from
its anchor (where retention last trimmed it) to its newest entry, a page at a time, and checks
that each entry's hash is sha256(prev_hash + its canonical JSON) and that its prev_hash is the
hash of the entry before. Prints {ok, checked, first_broken?, anchor}; exits 1 when broken.
Reads only: safe beside running servers.`,
  blobs: `Usage: switchboard blobs migrate

Moves the artifact contents a server kept as files under <data dir>/blobs into the PostgreSQL
database of DATABASE_URL (where cluster mode keeps them), so a single-node PostgreSQL install
can grow into a cluster: each file is streamed in, checked against its sha256 and then removed.
Run it on each machine that served with that data directory; it is safe beside running servers
(they read a file until it is moved) and a second run finishes what an interrupted one left.
Prints {"moved", "present", "corrupt"}; files whose bytes do not match their name stay.`,
  mcp: `Usage: switchboard mcp --url URL --key KEY

Serves the server's MCP tools over stdio (for desktop MCP clients), forwarding each call to
the server at URL (its /core/mcp endpoint) with the API key KEY. Clients of MCP 2025 (initialize)
and of MCP 2026-07-28 (stateless) are both served: the client's first message picks.
SWITCHBOARD_URL and SWITCHBOARD_API_KEY are used when the flags are absent.`,
};

/** Bad arguments or a refused command: a message on stderr and exit code 2. */
export function fail(message: string): never {
  console.error(`switchboard: ${message}`);
  process.exit(2);
}
