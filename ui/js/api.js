// api.js - the Kubernetes API as the signed-in user, and informers (list, then watch).
//
// Every request carries the user's bearer token in the Authorization header (never in a
// URL), or none, when the browser's client certificate is the credential. A failed request
// throws an ApiError holding the API's own Status message, which the page shows as it is.
// An informer lists a collection, then watches it from the list's resourceVersion; a watch
// that ends or breaks is resumed from the last resourceVersion it saw (bookmarks included),
// and a 410 Expired (the revision was compacted away) starts over with a fresh list.

export class ApiError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

let token = '';
export function setToken(t) { token = t || ''; }

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function errorOf(resp) {
  let reason = resp.statusText, message = `${resp.status} ${resp.statusText}`;
  try {
    const st = await resp.json();
    if (st && st.kind === 'Status') {
      reason = st.reason || reason;
      message = st.message || message;
    }
  } catch { /* not a Status: keep the HTTP line */ }
  return new ApiError(resp.status, reason, message);
}

export async function request(method, path, body, contentType = 'application/json') {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': contentType }),
    credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (!resp.ok) throw await errorOf(resp);
  return resp.status === 204 ? null : resp.json();
}

export const get = (path) => request('GET', path);
export const put = (path, obj) => request('PUT', path, obj);

// Read, change, write back with the read resourceVersion; a lost race (409) is retried.
export async function update(path, change) {
  for (let attempt = 0; ; attempt++) {
    const obj = await get(path);
    change(obj);
    try {
      return await put(path, obj);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 409 && attempt < 4)) throw e;
    }
  }
}

export function objKey(o) {
  const m = o.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

// The connection state all informers share: "live", "reconnecting" or "connecting".
const listeners = new Set();
const states = new Map();
export function onConnState(fn) { listeners.add(fn); }
function setState(inf, s) {
  if (inf) states.set(inf, s);
  let all = 'live';
  for (const v of states.values()) {
    if (v === 'reconnecting') { all = 'reconnecting'; break; }
    if (v === 'connecting') all = 'connecting';
  }
  for (const fn of listeners) fn(all);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The first page of a progressive informer's first list: a screenful of Fleet tiles, and some.
export const LIST_PAGE = 100;

export class Informer {
  // path: a collection (/apis/GROUP/VERSION/RESOURCE); onChange(informer) after each batch
  // of events (at most once a frame). progressive: show the first list's first page before
  // the rest arrives (list()), for a page that shows each object alone, not joined with
  // others (a partial join could show what is not so, such as a Work not acknowledged).
  constructor(path, { progressive = false } = {}) {
    this.path = path;
    this.progressive = progressive;
    this.items = new Map();
    this.rv = '';
    this.error = null;     // an ApiError that stops this informer (401, 403, 404)
    this.synced = false;
    this.subs = new Set();
    this.stopped = false;
    this.abort = null;
    this.pending = false;
    this.events = 0;       // events applied since the start, for the tests and the bench
  }

  subscribe(fn) {
    this.subs.add(fn);
    if (this.synced || this.error) fn(this);
    return () => this.subs.delete(fn);
  }

  notify() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      for (const fn of this.subs) fn(this);
    });
  }

  start() {
    this.run();
    return this;
  }

  stop() {
    this.stopped = true;
    if (this.abort) this.abort.abort();
    if (states.delete(this)) setState(null, null);
  }

  // A progressive informer's first list comes in two requests, a first page of LIST_PAGE
  // items, shown at once, then the rest (the same snapshot: the continue token holds its
  // revision), so a page's first screenful does not wait for a thousand objects to be
  // served and parsed; synced is set only once the whole list is in. Every other list, and
  // any relist, replaces the items at once, so nothing shown disappears meanwhile. A
  // continue token that expired (410) ends in a relist, as a watch's 410 does.
  async list() {
    const paged = this.progressive && !this.synced;
    const items = new Map();
    let cont = '', l;
    do {
      const sep = this.path.includes('?') ? '&' : '?';
      const query = cont ? `${sep}continue=${encodeURIComponent(cont)}` : paged ? `${sep}limit=${LIST_PAGE}` : '';
      l = await get(this.path + query);
      for (const o of l.items || []) items.set(objKey(o), o);
      cont = (paged && l.metadata && l.metadata.continue) || '';
      if (cont) {
        this.items = items;
        this.notify();
      }
    } while (cont);
    this.items = items;
    this.rv = (l.metadata && l.metadata.resourceVersion) || '';
    this.synced = true;
    this.notify();
  }

  async run() {
    let needList = true;
    this.delay = 250;
    setState(this, 'connecting');
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        const began = Date.now();
        needList = await this.watch();
        if (!needList && Date.now() - began < 1000) { // ended at once: do not spin
          await sleep(this.delay);
          this.delay = Math.min(this.delay * 2, 4000);
        }
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && (e.code === 401 || e.code === 403 || e.code === 404)) {
          this.error = e;
          setState(this, 'live');
          this.notify();
          return;
        }
        if (e instanceof ApiError && e.code === 410) needList = true;
        setState(this, 'reconnecting');
        await sleep(this.delay);
        this.delay = Math.min(this.delay * 2, 4000);
        continue;
      }
    }
  }

  // One watch from this.rv until it ends: true when a relist is needed (410), false when the
  // watch merely ended; a broken connection throws.
  async watch() {
    this.abort = new AbortController();
    const sep = this.path.includes('?') ? '&' : '?';
    const url = `${this.path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.rv)}`;
    const resp = await fetch(url, { headers: headers(), signal: this.abort.signal, cache: 'no-store',
      credentials: 'same-origin' });
    if (!resp.ok) throw await errorOf(resp);
    setState(this, 'live'); // only now: the watch is answered
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      this.delay = 250; // the connection works: a later break starts its back-off afresh
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        if (ev.type === 'ERROR') {
          if (ev.object && ev.object.code === 410) return true;
          throw new ApiError((ev.object && ev.object.code) || 500, 'WatchError',
            (ev.object && ev.object.message) || 'watch error');
        }
        const o = ev.object || {};
        if (o.metadata && o.metadata.resourceVersion) this.rv = o.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') this.items.delete(objKey(o));
        else this.items.set(objKey(o), o);
        this.events++;
        this.notify();
      }
    }
  }
}

// One informer per collection, shared by the pages that use it at the moment, and stopped
// when the last lets it go: each watch holds one of the six connections a browser opens to
// a server over HTTP/1.1, and a request that finds none free waits for one, so a page may
// keep at most five watches open (the sixth connection is for its lists and writes).
const informers = new Map();
export function informer(path, opts) {
  let inf = informers.get(path);
  if (!inf) {
    inf = new Informer(path, opts).start();
    inf.refs = 0;
    informers.set(path, inf);
  }
  inf.refs++;
  return inf;
}
export function release(inf) {
  if (--inf.refs > 0 || informers.get(inf.path) !== inf) return;
  informers.delete(inf.path);
  inf.stop();
}
export function stopAll() {
  for (const inf of informers.values()) inf.stop();
  informers.clear();
}

export const PATHS = {
  clusters: '/apis/cluster.karmada.io/v1alpha1/clusters',
  bindings: '/apis/work.karmada.io/v1alpha2/resourcebindings',
  clusterBindings: '/apis/work.karmada.io/v1alpha2/clusterresourcebindings',
  policies: '/apis/policy.karmada.io/v1alpha1/propagationpolicies',
  works: '/apis/work.karmada.io/v1alpha1/works',
  events: '/api/v1/events',
};
