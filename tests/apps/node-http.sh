#!/bin/sh
# SPDX-License-Identifier: MIT
# Node.js (libuv on epoll): its http server and an http client with a
# keep-alive agent of 4 sockets making 400 requests (answers of 1 octet to
# 256 KiB, a POST body echoed back); plainly and with both in DDPMODE.
# Every answer must be the one the server computed.
. "$(dirname "$0")/common.sh"
need node

cat >"$tmp/server.js" <<'EOF'
const http = require("http");
const crypto = require("crypto");
http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const n = Number(new URL(req.url, "http://x").searchParams.get("n") || 0);
    const body = Buffer.concat([Buffer.concat(chunks), crypto.createHash("sha256").update(String(n)).digest(),
                                Buffer.alloc(n, n % 251)]);
    res.writeHead(200, { "Content-Length": body.length });
    res.end(body);
  });
}).listen(Number(process.argv[2]), "127.0.0.1");
EOF
cat >"$tmp/client.js" <<'EOF'
const http = require("http");
const crypto = require("crypto");
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const port = Number(process.argv[2]);
let done = 0, bad = 0;
function one(i) {
  return new Promise((resolve) => {
    const n = (i * 7919) % 262144 + 1, post = Buffer.alloc(i % 3000, i % 256);
    const req = http.request({ host: "127.0.0.1", port, path: "/?n=" + n, method: "POST", agent,
                               headers: { "Content-Length": post.length } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const want = Buffer.concat([post, crypto.createHash("sha256").update(String(n)).digest(),
                                    Buffer.alloc(n, n % 251)]);
        if (!Buffer.concat(chunks).equals(want)) bad++;
        done++;
        resolve();
      });
    });
    req.on("error", (e) => { console.log("request " + i + ": " + e.message); bad++; resolve(); });
    req.end(post);
  });
}
(async () => {
  const all = [];
  for (let i = 0; i < 400; i++) all.push(one(i));
  await Promise.all(all);
  agent.destroy();
  console.log(done + " answers, " + bad + " wrong");
  process.exit(bad || done !== 400 ? 1 : 0);
})();
EOF

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	# shellcheck disable=SC2086
	start "$mode-node" $srv node "$tmp/server.js" "$port"
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $cli node "$tmp/client.js" "$port" >"$tmp/client.out" 2>&1 ||
		{ cat "$tmp/client.out"; fail "$mode: the client"; }
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run ddp
echo "node-http: 400 keep-alive requests over 4 sockets, plain and DDPMODE: ok"
