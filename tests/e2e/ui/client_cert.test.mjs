// The dashboard's other sign-in: the browser's own client certificate, as kubectl's kubeconfig
// would present it, with no token anywhere. A certificate from `flotilla ctl kubeconfig` goes
// into a throwaway NSS database (chromium's certificate store on Linux, in $HOME/.pki/nssdb)
// and chromium is told, by the managed policy AutoSelectCertificateForUrls (a file under
// /etc/chromium/policies/managed, removed afterwards), to present it to this server's address
// without asking. The user is named by the certificate alone; no request carries an
// Authorization header; and RBAC applies to that user as to kubectl: the Fleet page lists
// clusters for the user in a group allowed to, and a user without such a grant sees the API's
// refusal.
//
//   FLOTILLA_BIN=$PWD/build-asan/flotilla node --test tests/e2e/ui/client_cert.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import puppeteer from 'puppeteer-core';
import { freePort } from '../free_port.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const BIN = process.env.FLOTILLA_BIN || path.join(root, 'build/flotilla');
const CHROMIUM = process.env.FLOTILLA_CHROMIUM || '/usr/bin/chromium';
const POLICIES = '/etc/chromium/policies/managed';
const run = promisify(execFile);

// `flotilla server` alone (no members are needed to sign in); resolves once /readyz answers.
async function startServer(dir) {
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'server.log'), 'a');
  const proc = spawn(BIN, ['server', '--data-dir', path.join(dir, 'data'), '--listen', `127.0.0.1:${port}`],
    { stdio: ['ignore', log, log] });
  const url = `https://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      await run('curl', ['-sk', '--fail', '-m', '2', `${url}/livez`]);
      return { proc, url, kubeconfig: path.join(dir, 'data', 'kubeconfig') };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  proc.kill('SIGKILL');
  throw new Error(`flotilla server did not answer on ${url}:\n${fs.readFileSync(path.join(dir, 'server.log'), 'utf8')}`);
}

// A client certificate for user (in groups) from `flotilla ctl kubeconfig`, loaded into a new
// NSS database under home; returns nothing, throws with the tool's words.
async function certificateInto(home, server, user, groups) {
  const args = ['ctl', 'kubeconfig', '--user', user, '--kubeconfig', server.kubeconfig];
  for (const g of groups) args.push('--group', g);
  const { stdout } = await run(BIN, args);
  const field = (name) => Buffer.from(stdout.match(new RegExp(`${name}: (\\S+)`))[1], 'base64');
  const dir = fs.mkdtempSync(path.join(home, 'cert-'));
  fs.writeFileSync(path.join(dir, 'user.crt'), field('client-certificate-data'));
  fs.writeFileSync(path.join(dir, 'user.key'), field('client-key-data'), { mode: 0o600 });
  await run('openssl', ['pkcs12', '-export', '-in', path.join(dir, 'user.crt'), '-inkey', path.join(dir, 'user.key'),
    '-out', path.join(dir, 'user.p12'), '-passout', 'pass:']);
  const db = path.join(home, '.pki', 'nssdb');
  fs.mkdirSync(db, { recursive: true });
  await run('certutil', ['-N', '--empty-password', '-d', `sql:${db}`]);
  await run('pk12util', ['-i', path.join(dir, 'user.p12'), '-d', `sql:${db}`, '-W', '']);
}

// Sign in with the certificate in a fresh chromium whose $HOME is home; returns what the
// page says and the requests it made.
async function signInWithCertificate(server, home) {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    acceptInsecureCerts: true, // the server's own CA, which this throwaway profile does not trust
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    env: { ...process.env, HOME: home },
  });
  try {
    const page = await browser.newPage();
    const authorized = [];
    page.on('request', (r) => { if (r.headers().authorization) authorized.push(r.url()); });
    await page.goto(`${server.url}/ui/#/fleet`, { waitUntil: 'load' });
    await page.waitForSelector('#signin-cert');
    await page.click('#signin-cert');
    await page.waitForFunction(() => /Signed in as/.test(document.querySelector('#who')?.textContent || ''),
      { timeout: 15000 });
    const who = await page.$eval('#who', (n) => n.textContent);
    const token = await page.evaluate(() => sessionStorage.getItem('flotilla.token'));
    return { page, browser, who, token, authorized };
  } catch (e) {
    await browser.close();
    throw e;
  }
}

test('sign-in with the browser\'s client certificate', { timeout: 120000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-ui-cert-'));
  const server = await startServer(dir);
  const policy = path.join(POLICIES, `flotilla-e2e-${process.pid}.json`);
  t.after(() => {
    fs.rmSync(policy, { force: true });
    server.proc.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  try {
    fs.mkdirSync(POLICIES, { recursive: true });
    fs.writeFileSync(policy, JSON.stringify({
      AutoSelectCertificateForUrls: [JSON.stringify({ pattern: server.url, filter: {} })],
    }));
  } catch (e) {
    throw new Error(`this test tells chromium which certificate to present through ${POLICIES}, which it must ` +
      `be able to write (it runs as root in CI): ${e.message}`);
  }

  await t.test('an administrator\'s certificate signs in, with no token and no Authorization header', async () => {
    const home = fs.mkdtempSync(path.join(dir, 'home-admin-'));
    await certificateInto(home, server, 'cert-admin', ['system:masters']);
    const s = await signInWithCertificate(server, home);
    try {
      assert.match(s.who, /cert-admin/);
      assert.equal(s.token, null, 'no token kept in the tab');
      await s.page.waitForSelector('#fleet-summary');
      await s.page.waitForFunction(() => /0 clusters/.test(document.querySelector('#fleet-summary').textContent),
        { timeout: 15000 });
      assert.deepEqual(s.authorized, [], 'the certificate is the credential: no request carries a token');
    } finally {
      await s.browser.close();
    }
  });

  await t.test('a certificate of a user RBAC grants nothing signs in and sees the API refuse the list', async () => {
    const home = fs.mkdtempSync(path.join(dir, 'home-nobody-'));
    await certificateInto(home, server, 'cert-nobody', []);
    const s = await signInWithCertificate(server, home);
    try {
      assert.match(s.who, /cert-nobody/);
      // the API's own message, naming the user the certificate made
      await s.page.waitForFunction(() => /forbidden: User "cert-nobody" cannot list/.test(document.body.innerText),
        { timeout: 15000 });
    } finally {
      await s.browser.close();
    }
  });

  await t.test('without the certificate in the store, the same button is refused (401)', async () => {
    const home = fs.mkdtempSync(path.join(dir, 'home-empty-'));
    fs.mkdirSync(path.join(home, '.pki', 'nssdb'), { recursive: true });
    await run('certutil', ['-N', '--empty-password', '-d', `sql:${path.join(home, '.pki', 'nssdb')}`]);
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM, headless: true, acceptInsecureCerts: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
      env: { ...process.env, HOME: home },
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/`, { waitUntil: 'load' });
      await page.waitForSelector('#signin-cert');
      await page.click('#signin-cert');
      await page.waitForSelector('#login-error:not([hidden])', { timeout: 15000 });
      assert.match(await page.$eval('#login-error', (n) => n.textContent), /401 Unauthorized/);
    } finally {
      await browser.close();
    }
  });
});
