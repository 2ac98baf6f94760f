#!/usr/bin/env bash
# assent upstreams check: an MCP client's mcpServers file read as it is, its servers listed
# without their credentials, a bad entry refused naming the file, the server and what.
. "$(dirname "$0")/../lib.sh"
cat >"$T/claude_desktop_config.json" <<'JSON'
{ "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] },
    "github": { "command": "github-mcp-server", "args": ["stdio"], "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_s3cretvalue" } },
    "db": { "type": "http", "url": "https://db.internal:8443/mcp", "headers": { "Authorization": "Bearer hdr-s3cret" } } } }
JSON
expect_exit 0 "a Claude Desktop configuration is an upstreams file as it is" "$ASSENT" upstreams check "$T/claude_desktop_config.json"
check "it lists the three servers, their kinds and commands" sh -c "printf '%s' \"\$1\" | grep -q '3 upstream servers' && printf '%s' \"\$1\" | grep -q 'fs: stdio: npx -y @modelcontextprotocol/server-filesystem /srv/data' && printf '%s' \"\$1\" | grep -q 'db: Streamable HTTP: https://db.internal:8443/mcp'" _ "$OUT"
check "it names the credentials' variables and headers but never their values" sh -c "printf '%s' \"\$1\" | grep -q 'env: GITHUB_PERSONAL_ACCESS_TOKEN (values not shown)' && ! printf '%s' \"\$1\$2\" | grep -q 's3cret'" _ "$OUT" "$ERR"
printf '{"mcpServers":{"web":{"url":"http://example.com/mcp"}}}' >"$T/u1.json"
expect_exit 1 "plain http to another host is refused" "$ASSENT" upstreams check "$T/u1.json"
expect_err "^assent: .*/u1.json: server \"web\": \"url\": plain http:// only to a loopback address; use https:// for example.com$" "... naming the file, the server and what is wrong, in one line"
printf '{"mcpServers":{"fs__x":{"command":"x"}}}' >"$T/u2.json"
expect_exit 1 "a name with the tool separator is refused" "$ASSENT" upstreams check "$T/u2.json"
expect_err 'server "fs__x": a server.s name' "... saying why"
printf '{"mcpServers":{"a":{"command":"x","env":{"K":"v"},"headers":{"H":"v"}}}}' >"$T/u3.json"
expect_exit 1 "headers on a command are refused" "$ASSENT" upstreams check "$T/u3.json"
expect_err '"headers" belongs to an HTTP server' "... saying which member"
printf '{"mcpServers": {"a": {"command": "x",}}}' >"$T/u4.json"
expect_exit 1 "a file that is not JSON is refused with where" "$ASSENT" upstreams check "$T/u4.json"
expect_err 'not JSON: .*\(line 1, column' "... line and column"
expect_exit 2 "a file that cannot be read is a usage or I/O error" "$ASSENT" upstreams check "$T/none.json"
expect_exit 2 "no file is a usage error" "$ASSENT" upstreams check
done_testing
