// The remote kennel's forwarder: the relay's way in, over the container's own stdio.
//
// On another Docker engine there is no host folder to bind the relay's socket from,
// and no port may be opened. This runs as the container's main process (stdin kept
// open, attached by Fetch over the engine's API): it listens on the loopback port the
// CLIs already use, and carries each connection as frames on stdout (to Fetch) and
// stdin (from Fetch), where Fetch connects the stream to the run's relay socket.
//
// A frame: 1 byte kind, 4 bytes stream id, 4 bytes length (big-endian), payload.
//   R  ready (stream 0): listening
//   O  a connection opened (kennel -> Fetch)
//   D  bytes for the stream (both ways)
//   H  the sender will write no more to the stream (a half-close: both ways)
//   C  the stream is over (both ways)
// stdin's end (Fetch hung up) ends the process, and with it the container.
//
//   node -e "$(cat remote_mux.js)" 127.0.0.1 4100
'use strict';

const net = require('node:net');

const MAX_STREAMS = 64; // a task opening connections in a loop gets refused, not Fetch flooded
const MAX_FRAME = 1 << 20;
const args = process.argv.slice(1); // node -e SCRIPT HOST PORT
const host = args[0] || '127.0.0.1';
const port = Number(args[1] || 4100);

const streams = new Map(); // id -> socket
let nextId = 1;

function frame(kind, id, payload) {
  const body = payload || Buffer.alloc(0);
  const head = Buffer.alloc(9);
  head.write(kind, 0, 'latin1');
  head.writeUInt32BE(id, 1);
  head.writeUInt32BE(body.length, 5);
  process.stdout.write(body.length ? Buffer.concat([head, body]) : head);
}

function forget(id) {
  const sock = streams.get(id);
  if (sock) {
    streams.delete(id);
    sock.destroy();
  }
}

const server = net.createServer({ allowHalfOpen: true }, (sock) => {
  if (streams.size >= MAX_STREAMS) {
    sock.destroy();
    return;
  }
  const id = nextId++;
  streams.set(id, sock);
  frame('O', id);
  sock.on('data', (chunk) => {
    for (let at = 0; at < chunk.length; at += MAX_FRAME) {
      frame('D', id, chunk.subarray(at, at + MAX_FRAME));
    }
  });
  sock.on('end', () => frame('H', id));
  sock.on('error', () => {});
  sock.on('close', () => {
    if (streams.has(id)) {
      streams.delete(id);
      frame('C', id);
    }
  });
});
server.on('error', (err) => {
  process.stderr.write(`remote_mux: listen: ${err.code || err.message}\n`);
  process.exit(1);
});
server.listen({ host, port }, () => frame('R', 0));

let pending = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  while (pending.length >= 9) {
    const kind = String.fromCharCode(pending[0]);
    const id = pending.readUInt32BE(1);
    const size = pending.readUInt32BE(5);
    if (size > MAX_FRAME) {
      process.stderr.write('remote_mux: oversized frame from Fetch\n');
      process.exit(3);
    }
    if (pending.length < 9 + size) break;
    const body = pending.subarray(9, 9 + size);
    pending = pending.subarray(9 + size);
    const sock = streams.get(id);
    if (!sock) continue;
    if (kind === 'D') sock.write(Buffer.from(body));
    else if (kind === 'H') sock.end();
    else if (kind === 'C') forget(id);
  }
});
// Fetch hung up: no relay can be reached any more; the container goes with us.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdout.on('error', () => process.exit(0));
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => process.exit(0));
