// free_port.mjs - a loopback port nobody listens on, for the JavaScript end-to-end tests
// (tests/e2e/node, tests/e2e/ui) to start a server on.
import net from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
