// main.js - the dashboard's shell: sign-in, the page router (#/fleet, #/apps, ...), the
// connection indicator and the user's name.
//
// Sign-in: a bearer token pasted once is kept in sessionStorage (this tab only, gone when it
// closes; never put in a URL or logged), or no token at all when the browser presents a
// client certificate. The credential is checked with a SelfSubjectReview, which any
// authenticated user may make; a refused one shows the API's message and nothing else.
import { ApiError, onConnState, request, setToken, stopAll } from './api.js';
import { h, showAlert } from './dom.js';
import * as fleet from './fleet.js';

// The Fleet page, the one a sign-in opens, comes with the shell; every other page's module is
// fetched when it is first opened, so the first load waits for four modules instead of ten
// (each a request, and a TLS handshake for each new connection, before anything is listed).
const PAGES = {
  fleet: () => fleet,
  apps: () => import('./apps.js'),
  policies: () => import('./policies.js'),
  suspension: () => import('./suspension.js'),
  failover: () => import('./failover.js'),
  events: () => import('./events.js'),
};
const KEY = 'flotilla.token';
let unmount = null;
let signedIn = false;
let routing = 0; // bumped by every route and sign-out: a page module that arrives late is not shown

async function whoami() {
  const r = await request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  return (r.status && r.status.userInfo && r.status.userInfo.username) || '';
}

function loginPage(message) {
  const main = document.getElementById('main');
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': 'token-help' });
  const err = h('p.login-error', { id: 'login-error', role: 'alert' }, message || '');
  err.hidden = !message;
  const form = h('form.login', { 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Sign in to Flotilla'),
    h('label', { for: 'token' }, 'Bearer token'),
    input,
    h('p.help', { id: 'token-help' }, 'The token kubectl uses (the user in your kubeconfig, or ',
      h('code', {}, 'kubectl create token NAME'), '). It is kept in this tab only.'),
    err,
    h('div.buttons', {},
      h('button.primary', { type: 'submit', id: 'signin' }, 'Sign in'),
      h('button', { type: 'button', id: 'signin-cert', onclick: () => signIn('') }, 'Use my client certificate')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    signIn(input.value.trim());
  });
  main.replaceChildren(form);
  input.focus();
}

// A token kept from earlier in this tab opens the page at once, while it is checked (a
// refused one brings back the sign-in page); a new one is checked first.
async function signIn(token, kept = false) {
  setToken(token);
  let user;
  const check = whoami();
  if (kept) enter(token, '');
  try {
    user = await check;
  } catch (e) {
    if (kept) signOut();
    setToken('');
    sessionStorage.removeItem(KEY);
    const why = e instanceof ApiError
      ? (e.code === 401 ? `The credential was not accepted (401 ${e.reason}): ${e.message}. Check the token and try again.`
        : `Signing in failed (${e.code} ${e.reason}): ${e.message}`)
      : `The server could not be reached: ${e.message}`;
    loginPage(why);
    return;
  }
  if (kept) document.getElementById('who').textContent = user ? `Signed in as ${user}` : '';
  else enter(token, user);
}

function enter(token, user) {
  if (token) sessionStorage.setItem(KEY, token);
  signedIn = true;
  document.getElementById('who').textContent = user ? `Signed in as ${user}` : '';
  document.getElementById('nav').hidden = false;
  document.getElementById('logout').hidden = false;
  route();
}

function signOut() {
  sessionStorage.removeItem(KEY);
  setToken('');
  signedIn = false;
  routing++;
  if (unmount) unmount();
  unmount = null;
  stopAll();
  document.getElementById('nav').hidden = true;
  document.getElementById('logout').hidden = true;
  document.getElementById('who').textContent = '';
  document.getElementById('conn').textContent = '';
  showAlert('');
  loginPage();
}

async function route() {
  if (!signedIn) return;
  const name = (location.hash.replace(/^#\/?/, '') || 'fleet').split('/')[0];
  const page = Object.hasOwn(PAGES, name) ? name : 'fleet';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  showAlert('');
  const seq = ++routing;
  let mod;
  try {
    mod = await PAGES[page]();
  } catch (e) {
    if (seq === routing) showAlert(`The ${page} page could not be loaded: ${e.message}`);
    return;
  }
  if (seq !== routing) return; // another page was asked for, or the user signed out, meanwhile
  const main = document.getElementById('main');
  main.replaceChildren();
  main.dataset.page = page;
  document.title = `Flotilla · ${page[0].toUpperCase()}${page.slice(1)}`;
  // the new page first: the informers both pages use are kept, not stopped and listed again
  const old = unmount;
  unmount = mod.mount(main);
  if (old) old();
}

onConnState((s) => {
  const el = document.getElementById('conn');
  el.dataset.state = s;
  el.textContent = s === 'reconnecting' ? 'Reconnecting…' : s === 'connecting' ? 'Connecting…' : 'Live';
});

window.addEventListener('hashchange', route);
document.getElementById('logout').addEventListener('click', signOut);
const saved = sessionStorage.getItem(KEY);
if (saved) signIn(saved, true);
else loginPage();
