// failover.js - the Failover page: per application (binding), a timeline of its failovers and
// evictions, newest first, live. Three sources, as `flotilla ctl failover history` reads them
// (docs/failover.md):
//  - status.failoverHistory: each failover, with where it went, the state it carried over and
//    how it ended (an item without completionTime is still going on);
//  - spec.gracefulEvictionTasks: evictions in progress; a task no open history item stands for
//    (the failover controllers have not written it yet) is a row of its own, with its deadline;
//  - Events on the binding with a failover or eviction reason (FailoverStarted, ...).
// Watches: ResourceBindings, ClusterResourceBindings and Events (three of the five).
import { PATHS, informer, objKey, release } from './api.js';
import { age, h, name, showAlert } from './dom.js';

const SHOWN = 200; // applications shown at most: the page stays fast whatever the store holds
const GRACE_DEFAULT = 600; // --graceful-eviction-timeout's default: a task's gracePeriodSeconds when unset

// Event reasons that belong on the timeline (docs/failover.md).
export const EVENT_REASONS = new Set(['FailoverStarted', 'FailoverCompleted', 'FailoverSuppressed',
  'EvictWorkloadFromClusterSucceed', 'EvictWorkloadFromClusterFailed', 'ApplicationFailoverInactive',
  'StatePreservationFailed']);

// What a reason means, in words; an unknown reason is shown as it is.
const REASONS = {
  ClusterFailover: 'Cluster failover (taint)',
  ApplicationFailover: 'Application failover',
  TaintUntolerated: 'Eviction by taint',
  ApplicationFailure: 'Eviction: application unhealthy',
};
export const reasonText = (r) => REASONS[r] || r || 'Eviction';

const ms = (ts) => (ts ? Date.parse(ts) : NaN);
const eventTime = (e) => e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) ||
  e.firstTimestamp || e.metadata.creationTimestamp || '';

// The open history item a task stands for (same cluster, not completed, or started when the
// task was made), as the CLI pairs them.
function historyForTask(history, task) {
  return history.find((x) => x.fromCluster && x.fromCluster === task.fromCluster &&
    (!x.completionTime || (task.creationTimestamp && ms(task.creationTimestamp) === ms(x.startTime))));
}

// When a task ends at the latest, and what ends it earlier.
export function deadline(task) {
  if (!task) return null;
  if (task.purgeMode === 'Never' || task.suppressDeletion === true)
    return { at: '', text: task.suppressDeletion === true ? 'kept until suppressDeletion is set to false'
      : 'kept until removed by hand (purge mode Never)' };
  const start = ms(task.creationTimestamp);
  if (Number.isNaN(start)) return { at: '', text: 'ends when the new copies are Healthy' };
  const grace = Number.isInteger(task.gracePeriodSeconds) ? task.gracePeriodSeconds : GRACE_DEFAULT;
  const at = new Date(start + grace * 1000).toISOString().replace(/\.000Z$/, 'Z');
  return { at, text: 'ends when the new copies are Healthy' };
}

const others = (clusters, from) => (clusters || []).map((c) => c.name || c).filter((c) => c && c !== from);

// A binding's timeline, newest first: entries of kind "failover" (history), "eviction" (a task
// not in the history yet) and "event".
export function timeline(b, events) {
  const history = (b.status && b.status.failoverHistory) || [];
  const tasks = (b.spec && b.spec.gracefulEvictionTasks) || [];
  const now = (b.spec && b.spec.clusters) || [];
  const out = [];
  history.forEach((x, i) => {
    const task = tasks.find((t) => historyForTask(history, t) === x);
    const done = !!x.completionTime;
    const after = x.clustersAfterFailover || [];
    out.push({ kind: 'failover', time: x.startTime || '', seq: i, reason: x.reason, from: x.fromCluster || '',
      to: done || after.length ? others(after) : others(now, x.fromCluster), state: x.preservedLabelState || {},
      inProgress: !done, completed: x.completionTime || '', outcome: x.outcome || '',
      purgeMode: x.purgeMode || (task && task.purgeMode) || '', deadline: done ? null : deadline(task),
      producer: task ? task.producer || '' : '' });
  });
  tasks.forEach((t, i) => {
    if (historyForTask(history, t)) return;
    out.push({ kind: 'eviction', time: t.creationTimestamp || '', seq: history.length + i, reason: t.reason,
      from: t.fromCluster || '', to: others(now, t.fromCluster), state: t.preservedLabelState || {},
      inProgress: true, purgeMode: t.purgeMode || '', deadline: deadline(t), producer: t.producer || '',
      message: t.message || '' });
  });
  (events || []).forEach((e, i) => {
    out.push({ kind: 'event', time: eventTime(e), seq: 1e6 + i, reason: e.reason, type: e.type || 'Normal',
      message: e.message || e.note || '', from: '', to: [], state: {} });
  });
  // newest first; among equal times the later written first
  out.sort((a, c) => (ms(c.time) || 0) - (ms(a.time) || 0) || c.seq - a.seq);
  return out;
}

// The time until at, in age()'s units, or "due" once it has passed.
function left(at) {
  const s = Math.round((Date.parse(at) - Date.now()) / 1000);
  if (s <= 0) return 'due';
  return `in ${s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`}`;
}

// The cluster names an event's message may hold (member1 is not member10).
const words = (m) => (m || '').split(/[^A-Za-z0-9.-]+/).map((w) => w.replace(/\.$/, ''));

const list = (xs) => (xs.length ? xs.join(', ') : '—');

function entryNode(x) {
  const route = x.kind === 'event' ? null
    : h('span.route', { 'aria-label': `from ${x.from || 'unknown'} to ${list(x.to)}` },
      h('span.from', {}, x.from || '—'), h('span', { 'aria-hidden': 'true' }, ' → '), h('span.to', {}, list(x.to)));
  const labels = Object.entries(x.state || {});
  const stateNode = labels.length ? h('ul.chips.preserved', { 'aria-label': 'Preserved state labels' },
    ...labels.map(([k, v]) => h('li.chip.label', { title: `${k}=${v}` }, `${k}=${v}`))) : null;
  let status;
  if (x.kind === 'event') {
    status = h('span.fo-msg', {}, x.message);
  } else if (x.inProgress) {
    const d = x.deadline;
    status = h('span.fo-status', {}, h('span.badge.inProgress', {}, 'In progress'),
      d ? h('span.deadline', { 'data-deadline': d.at || '' }, d.at
        ? [`${d.text}, at the latest `, h('time', { datetime: d.at, title: d.at }, new Date(d.at).toLocaleString()),
          ` (${left(d.at)})`]
        : d.text) : null);
  } else {
    status = h('span.fo-status', {}, h(`span.badge.${x.outcome === 'NewCopyHealthy' ? 'current' : 'unknown'}`, {},
      x.outcome || 'Completed'), ' at ', h('time', { datetime: x.completed, title: x.completed }, new Date(x.completed).toLocaleString()));
  }
  const kindText = x.kind === 'failover' ? 'Failover' : x.kind === 'eviction' ? 'Eviction' : `Event (${x.type})`;
  return h(`li.fo-entry.${x.kind}`, { 'data-kind': x.kind, 'data-reason': x.reason || '', 'data-from': x.from,
    'data-to': x.to.join(','), 'data-state': x.kind === 'event' ? 'event' : x.inProgress ? 'inprogress' : 'done' },
  h('div.fo-when', {}, h('time', { datetime: x.time, title: x.time }, x.time ? new Date(x.time).toLocaleString() : '—'),
    h('span.meta', {}, x.time ? ` ${age(x.time)} ago` : '')),
  h('div.fo-what', {},
    h('span.fo-kind', {}, kindText), ' ',
    h(`span.fo-reason${x.kind === 'event' && x.type === 'Warning' ? '.warning' : ''}`, {}, x.kind === 'event' ? x.reason : reasonText(x.reason)),
    x.producer ? h('span.meta', {}, ` by ${x.producer}`) : null,
    x.purgeMode ? h('span.meta', {}, ` · purge ${x.purgeMode}`) : null, stateNode),
  route, status);
}

const templateOf = (b) => {
  const r = (b.spec && b.spec.resource) || {};
  return { kind: r.kind || '', name: `${r.namespace ? `${r.namespace}/` : ''}${r.name || b.metadata.name}` };
};

export function mount(main) {
  const rbs = informer(PATHS.bindings);
  const crbs = informer(PATHS.clusterBindings);
  const evs = informer(PATHS.events);
  const search = h('input', { type: 'search', id: 'failover-search', placeholder: 'application or namespace' });
  const cluster = h('select', { id: 'failover-cluster' }, h('option', { value: '' }, 'All clusters'));
  const active = h('input', { type: 'checkbox', id: 'failover-active' });
  const summary = h('p.summary', { id: 'failover-summary', 'aria-live': 'polite' });
  const listNode = h('div.fo-apps', { id: 'failover-list' });
  main.append(h('h1', {}, 'Failover'),
    h('div.toolbar', { role: 'search', 'aria-label': 'Filter failovers' },
      h('label', { for: 'failover-search' }, 'Application'), search,
      h('label', { for: 'failover-cluster' }, 'Cluster'), cluster,
      h('span', {}, active, h('label', { for: 'failover-active' }, ' Only in progress'))),
    summary, listNode);

  const render = () => {
    const err = rbs.error || crbs.error || evs.error;
    if (rbs.error && crbs.error) {
      showAlert(`Bindings cannot be read: ${rbs.error.message}`);
      return;
    }
    if (err) showAlert(`Some failover data cannot be read: ${err.message}`);
    // the failover events by binding
    const byBinding = new Map();
    for (const e of evs.items.values()) {
      if (!EVENT_REASONS.has(e.reason)) continue;
      const io = e.involvedObject || e.regarding || {};
      if (io.kind !== 'ResourceBinding' && io.kind !== 'ClusterResourceBinding') continue;
      const k = `${io.kind}:${io.namespace ? `${io.namespace}/` : ''}${io.name}`;
      if (!byBinding.has(k)) byBinding.set(k, []);
      byBinding.get(k).push(e);
    }
    const apps = [];
    const clusters = new Set();
    for (const [inf, kind] of [[rbs, 'ResourceBinding'], [crbs, 'ClusterResourceBinding']]) {
      for (const b of inf.items.values()) {
        const key = objKey(b);
        const entries = timeline(b, byBinding.get(`${kind}:${key}`));
        if (!entries.length) continue;
        for (const x of entries) {
          if (x.from) clusters.add(x.from);
          for (const c of x.to) clusters.add(c);
        }
        apps.push({ b, key, kind, entries, newest: ms(entries[0].time) || 0 });
      }
    }
    // the cluster choices: those named on a timeline, the chosen one kept
    const want = ['', ...[...clusters].sort()];
    if (cluster.value && !clusters.has(cluster.value)) want.push(cluster.value);
    const have = [...cluster.options].map((o) => o.value);
    if (have.join('\n') !== want.join('\n')) {
      const v = cluster.value;
      cluster.replaceChildren(...want.map((c) => h('option', { value: c }, c || 'All clusters')));
      cluster.value = v;
    }
    const q = search.value.trim().toLowerCase();
    const c = cluster.value;
    const shown = [];
    let inProgress = 0;
    apps.sort((a, b) => b.newest - a.newest || (a.key < b.key ? -1 : 1));
    for (const a of apps) {
      const t = templateOf(a.b);
      if (a.entries.some((x) => x.inProgress)) inProgress++;
      if (q && !`${a.key} ${t.kind} ${t.name}`.toLowerCase().includes(q)) continue;
      let entries = a.entries;
      if (c) entries = entries.filter((x) => (x.kind === 'event' ? words(x.message) : [x.from, ...x.to]).includes(c));
      if (active.checked) entries = entries.filter((x) => x.inProgress);
      if (!entries.length || shown.length >= SHOWN) continue;
      const now = ((a.b.spec && a.b.spec.clusters) || []).map((x) => x.name);
      const title = `${t.kind} ${t.name}`;
      const id = `fo-${a.kind}-${a.key}`.replace(/[^A-Za-z0-9_-]/g, '_');
      shown.push(h('section.card.fo-app', { 'data-binding': a.key, 'aria-labelledby': id },
        h('header', {}, h('h2', { id }, h('span.kind', {}, t.kind), ' ', name(t.name, 'name app-name'))),
        h('p.meta', {}, `${a.kind === 'ResourceBinding' ? 'binding' : 'cluster binding'} ${a.key} · now on ${list(now)}`),
        h('ol.timeline', { 'aria-label': `Failovers and evictions of ${title}, newest first` }, ...entries.map(entryNode))));
    }
    const total = apps.length;
    summary.textContent = `${total} application${total === 1 ? '' : 's'} with failovers or evictions, ${inProgress} in progress` +
      `${shown.length < total ? `, ${shown.length} shown` : ''}`;
    const synced = rbs.synced && (crbs.synced || crbs.error) && (evs.synced || evs.error);
    listNode.replaceChildren(...(shown.length ? shown
      : [h('p.empty', {}, !synced ? 'Loading…' : total ? 'No failover matches.' : 'No failover or eviction yet.')]));
  };
  search.addEventListener('input', render);
  cluster.addEventListener('change', render);
  active.addEventListener('change', render);
  const unsubs = [rbs, crbs, evs].map((inf) => inf.subscribe(render));
  const tick = setInterval(render, 15000); // the ages and the time left
  render();
  return () => {
    clearInterval(tick);
    for (const u of unsubs) u();
    for (const inf of [rbs, crbs, evs]) release(inf);
  };
}
