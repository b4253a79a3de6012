// apps.js - the Applications page: one row per ResourceBinding (one per propagated
// template), with its policy, a bar of its replicas split across clusters (the scheduler's
// decision, spec.clusters), the live state counts of status.summary (docs/status.md) and, on
// demand, each cluster's state from status.aggregatedStatus. Live from a watch of the
// bindings.
import { ApiError, PATHS, informer, objKey, release, update } from './api.js';
import { age, colourOf, confirmDialog, h, name, showAlert, syncChildren } from './dom.js';
import { renderedDiff } from './workdiff.js';

const STATES = [['current', 'Current'], ['inProgress', 'InProgress'], ['failed', 'Failed'],
  ['unknown', 'Unknown'], ['terminating', 'Terminating'], ['notFound', 'NotFound']];
const open = new Set(); // bindings whose detail is shown

function policyOf(b) {
  const a = b.metadata.annotations || {};
  if (a['propagationpolicy.karmada.io/name'])
    return `${a['propagationpolicy.karmada.io/namespace'] || ''}/${a['propagationpolicy.karmada.io/name']}`;
  if (a['clusterpropagationpolicy.karmada.io/name']) return `(cluster) ${a['clusterpropagationpolicy.karmada.io/name']}`;
  return '—';
}

export function splitBar(b) {
  const cs = (b.spec && b.spec.clusters) || [];
  const total = cs.reduce((s, c) => s + (c.replicas || 0), 0);
  const segs = cs.map((c) => {
    const n = total ? c.replicas || 0 : 1;
    const seg = h(`span.seg.c${colourOf(c.name)}`, { title: `${c.name}: ${c.replicas || 0} replicas`,
      'data-cluster': c.name, 'data-replicas': c.replicas || 0 }, total ? `${c.name} ${c.replicas || 0}` : c.name);
    seg.style.flexGrow = String(n);
    return seg;
  }).filter((s) => s.style.flexGrow !== '0');
  const text = cs.length
    ? cs.map((c) => `${c.name}: ${c.replicas || 0}`).join(', ')
    : 'not scheduled yet';
  return h('div.split', { role: 'img', 'aria-label': `Replicas by cluster: ${text}`, 'data-split': text },
    segs.length ? segs : h('span.seg.none', {}, 'not scheduled yet'));
}

function counts(b) {
  const s = (b.status && b.status.summary) || null;
  if (!s) return h('span.counts', {}, 'no status yet');
  return h('span.counts', { 'aria-label': 'Live state per cluster' },
    ...STATES.filter(([k]) => s[k]).map(([k, label]) => h(`span.state.${k}`, { title: label }, `${label} ${s[k]}`)));
}

function detail(b) {
  const rows = ((b.status && b.status.aggregatedStatus) || []).map((a) => h('tr', {},
    h('th', { scope: 'row' }, name(a.clusterName)),
    h('td', {}, a.applied ? 'yes' : 'no'),
    h('td', {}, h(`span.state.${(a.liveStatus || 'Unknown').replace(/^./, (x) => x.toLowerCase())}`, {}, a.liveStatus || '—')),
    h('td', {}, a.health || '—'),
    h('td', {}, a.status && a.status.readyReplicas !== undefined ? `${a.status.readyReplicas}/${a.status.replicas || 0}` : '—'),
    h('td', {}, a.appliedMessage || ''),
    h('td', {}, h('button', { type: 'button', 'data-action': 'work', 'data-cluster': a.clusterName,
      'aria-label': `Rendered Work for ${a.clusterName}` }, 'Rendered Work'))));
  return h('table.detail', {},
    h('caption', {}, 'Per cluster'),
    h('thead', {}, h('tr', {}, ...['Cluster', 'Applied', 'Live state', 'Health', 'Ready', 'Message', 'Delivered'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows.length ? rows : [h('tr', {}, h('td', { colspan: 7 }, 'No cluster status yet.'))]));
}

// Ask the scheduler for a fresh decision (spec.rescheduleTriggeredAt, as Karmada's
// WorkloadRebalancer sets it): the replicas are divided again from scratch rather than from
// the current split (a cluster the binding already uses keeps tolerating NoSchedule taints,
// as in Karmada).
async function reschedule(b) {
  const r = b.spec.resource;
  const title = `Reschedule ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
  const body = h('p', {}, 'Ask the scheduler for a fresh decision: the replicas are divided again from scratch, not from the current split.');
  if (!(await confirmDialog(title, body, 'Reschedule'))) return;
  const path = `/apis/work.karmada.io/v1alpha2/namespaces/${encodeURIComponent(b.metadata.namespace)}/resourcebindings/${encodeURIComponent(b.metadata.name)}`;
  try {
    await update(path, (obj) => { obj.spec.rescheduleTriggeredAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z'); });
    showAlert(`${title}: asked; the split above follows the scheduler's decision.`, 'info');
  } catch (e) {
    showAlert(e instanceof ApiError ? `${title} was refused: ${e.message}` : `${title} failed: ${e.message}`);
  }
}

// The open diffs, by binding: kept when a row is rebuilt by a status change.
const diffs = new Map();
async function showWork(li, cluster) {
  const key = li.dataset.binding;
  const box = h('div.diff-box', { 'aria-live': 'polite' }, 'Reading the Work…');
  diffs.set(key, box);
  li.querySelector('details').append(box);
  try {
    box.replaceChildren(await renderedDiff(li.binding, cluster));
  } catch (e) {
    box.replaceChildren(h('p.login-error', {}, `The Work cannot be read: ${e.message}`));
  }
  const old = li.querySelectorAll('.diff-box');
  for (const o of old) if (o !== box) o.remove();
}

function row(b, onOpen) {
  const r = (b.spec && b.spec.resource) || {};
  const key = objKey(b);
  const s = (b.status && b.status.summary) || {};
  const state = s.state || 'InProgress';
  const d = h('details', { 'data-binding': key },
    h('summary', {},
      h('span.kind', {}, r.kind || '?'),
      name(`${r.namespace ? `${r.namespace}/` : ''}${r.name || b.metadata.name}`, 'name app-name'),
      h(`span.badge.${state.replace(/^./, (x) => x.toLowerCase())}`, {}, state),
      h('span.policy', { title: 'PropagationPolicy' }, `policy ${policyOf(b)}`)),
    splitBar(b), counts(b),
    h('div.actions', {}, h('button', { type: 'button', 'data-action': 'reschedule',
      'aria-label': `Reschedule ${r.kind} ${r.name}` }, 'Reschedule…')),
    detail(b), h('h3', {}, 'Events'));
  const events = h('ul.app-events', { 'aria-label': `Events of ${r.kind} ${r.name}` });
  d.append(events);
  if (open.has(key)) d.open = true;
  d.addEventListener('toggle', () => {
    if (d.open) open.add(key); else open.delete(key);
    onOpen();
  });
  if (diffs.has(key)) d.append(diffs.get(key));
  const li = h('li.app', { 'data-binding': key }, d);
  li.events = events;
  li.binding = b;
  return li;
}

// The events of a binding and of its template, newest first (at most 20): from the events
// informer, started the first time a row is opened.
const when = (e) => e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp || '';
function fillEvents(li, evInf) {
  const b = li.binding;
  const r = (b.spec && b.spec.resource) || {};
  const mine = [...evInf.items.values()].filter((e) => {
    const io = e.involvedObject || e.regarding || {};
    return (io.kind === r.kind && io.name === r.name && (io.namespace || '') === (r.namespace || '')) ||
      (io.kind === 'ResourceBinding' && io.name === b.metadata.name && io.namespace === b.metadata.namespace);
  }).sort((x, y) => (when(x) < when(y) ? 1 : -1)).slice(0, 20);
  li.events.replaceChildren(...(mine.length ? mine.map((e) => h('li', { 'data-reason': e.reason || '' },
    h(`span.type.${(e.type || 'Normal').toLowerCase()}`, {}, e.reason || ''), ' ',
    h('span.kind', {}, `${(e.involvedObject || {}).kind || ''} · ${age(when(e))}`), ' ', e.message || ''))
    : [h('li.empty', {}, evInf.synced ? 'No events.' : 'Loading…')]));
}

export function mount(main) {
  const inf = informer(PATHS.bindings);
  const search = h('input', { type: 'search', id: 'apps-search', placeholder: 'name, kind or namespace' });
  const list = h('ul.apps', { id: 'apps-list', 'aria-label': 'Applications', onclick: (e) => {
    const btn = e.target.closest('button[data-action]');
    if (btn && btn.dataset.action === 'work') showWork(btn.closest('li.app'), btn.dataset.cluster);
    if (btn && btn.dataset.action === 'reschedule') reschedule(btn.closest('li.app').binding);
  } });
  const summary = h('p.summary', { 'aria-live': 'polite' });
  main.append(h('h1', {}, 'Applications'),
    h('div.toolbar', { role: 'search' }, h('label', { for: 'apps-search' }, 'Search'), search), summary, list);
  const rows = new Map();
  const render = () => {
    if (inf.error) {
      showAlert(`Bindings cannot be read: ${inf.error.message}`);
      return;
    }
    const q = search.value.trim().toLowerCase();
    const items = [...inf.items.values()].sort((a, b) => (objKey(a) < objKey(b) ? -1 : 1));
    const out = [];
    const seen = new Set();
    for (const b of items) {
      const key = objKey(b);
      seen.add(key);
      const r = (b.spec && b.spec.resource) || {};
      if (q && !`${r.kind} ${r.namespace}/${r.name}`.toLowerCase().includes(q)) continue;
      let e = rows.get(key);
      if (!e || e.rv !== b.metadata.resourceVersion) {
        e = { rv: b.metadata.resourceVersion, el: row(b, openEvents) };
        rows.set(key, e);
      }
      out.push(e.el);
    }
    for (const k of rows.keys()) if (!seen.has(k)) rows.delete(k);
    summary.textContent = `${items.length} propagated templates`;
    syncChildren(list, out.length ? out : [h('li.empty', {}, inf.synced ? 'Nothing is propagated yet.' : 'Loading…')]);
    if (evInf) for (const li of out) if (li.events && open.has(li.dataset.binding)) fillEvents(li, evInf);
  };
  let evInf = null, evUnsub = null;
  const openEvents = () => {
    if (!evInf) {
      evInf = informer(PATHS.events);
      evUnsub = evInf.subscribe(render);
    }
    render();
  };
  search.addEventListener('input', render);
  const unsub = inf.subscribe(render);
  if (open.size) openEvents();
  render();
  return () => { unsub(); release(inf); if (evUnsub) { evUnsub(); release(evInf); } };
}
