// fleet.js - the Fleet page: every Cluster as a tile (Ready, taints, paused, sync mode,
// version, capacity and allocation bars), live from a watch of the Clusters; search, a
// state filter and grouping by region, zone, mode or any label. Actions: cordon (a
// NoSchedule taint, as `karmadactl cordon` adds) and uncordon, pause and resume delivery
// (spec.suspendDispatching, as `flotilla ctl suspend cluster` sets). A tile is rebuilt only
// when its Cluster's resourceVersion changes, so 1,000 clusters stay cheap to keep live.
import { ApiError, PATHS, informer, release, update } from './api.js';
import { bar, condition, confirmDialog, h, name, quantity, keepFocus, setBar, showAlert, syncChildren } from './dom.js';

export const CORDON_KEY = 'cluster.karmada.io/unschedulable';

const tiles = new Map(); // cluster name -> { rv, el }
// Tiles built per pass: a first screenful (and some) at once, shown in the next frame, then
// the rest in one more task (up to 1,000 a pass). Every pass is followed by a frame in which
// the browser lays the grid out again, so fewer passes cost less in all: 100 then 400 at a
// time made five passes and five layouts; two passes make one task of the page's own longer
// (~150-250 ms for 900 tiles on a loaded 2-core machine, docs/BENCHMARKS.md, issue 43).
const FIRST_BUDGET = 100;
const BUILD_BUDGET = 1000;

function readiness(c) {
  const r = condition(c, 'Ready');
  if (!r) return ['unknown', 'Unknown'];
  return r.status === 'True' ? ['ready', 'Ready'] : ['notready', r.status === 'False' ? 'Not ready' : 'Unknown'];
}

const cordoned = (c) => ((c.spec && c.spec.taints) || []).some((t) => t.key === CORDON_KEY && t.effect === 'NoSchedule');
const paused = (c) => !!(c.spec && c.spec.suspendDispatching);

function fmtCpu(v) { return Number.isFinite(v) ? (v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1)) : '?'; }
function fmtBytes(v) {
  if (!Number.isFinite(v)) return '?';
  if (v === 0) return '0';
  const units = ['B', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v >= 10 ? v.toFixed(0) : v.toFixed(1)}${units[i]}`;
}

// A resource's allocated (and allocating) share of the allocatable, or null without one.
function usage(c, res) {
  const rs = (c.status && c.status.resourceSummary) || {};
  const total = quantity((rs.allocatable || {})[res]);
  if (!Number.isFinite(total)) return null;
  const used = (quantity((rs.allocated || {})[res]) || 0) + (quantity((rs.allocating || {})[res]) || 0);
  return { used, total };
}

async function act(title, body, okLabel, path, change, done) {
  if (!(await confirmDialog(title, body, okLabel))) return;
  try {
    await update(path, change);
    showAlert(done, 'info');
  } catch (e) {
    showAlert(e instanceof ApiError ? `${title} was refused: ${e.message}` : `${title} failed: ${e.message}`);
  }
}

function cordon(c, on) {
  const n = c.metadata.name;
  const title = on ? `Cordon ${n}` : `Uncordon ${n}`;
  const body = h('p', {}, on
    ? `Add the taint ${CORDON_KEY}:NoSchedule to cluster ${n}: nothing new is scheduled there; what runs there stays.`
    : `Remove the taint ${CORDON_KEY}:NoSchedule from cluster ${n}: it can be scheduled to again.`);
  act(title, body, on ? 'Cordon' : 'Uncordon', `${PATHS.clusters}/${encodeURIComponent(n)}`, (obj) => {
    obj.spec = obj.spec || {};
    const rest = (obj.spec.taints || []).filter((t) => !(t.key === CORDON_KEY && t.effect === 'NoSchedule'));
    if (on) rest.push({ key: CORDON_KEY, effect: 'NoSchedule', timeAdded: new Date().toISOString().replace(/\.\d+Z$/, 'Z') });
    if (rest.length) obj.spec.taints = rest;
    else delete obj.spec.taints;
  }, on ? `Cluster ${n} cordoned.` : `Cluster ${n} uncordoned.`);
}

function pause(c, on) {
  const n = c.metadata.name;
  const title = on ? `Pause ${n}` : `Resume ${n}`;
  const body = h('p', {}, on
    ? `Stop all delivery to cluster ${n} (spec.suspendDispatching): nothing is created, updated or deleted there until it is resumed.`
    : `Resume delivery to cluster ${n}: the latest desired state is applied once.`);
  act(title, body, on ? 'Pause' : 'Resume', `${PATHS.clusters}/${encodeURIComponent(n)}`, (obj) => {
    obj.spec = obj.spec || {};
    if (on) obj.spec.suspendDispatching = true;
    else delete obj.spec.suspendDispatching;
  }, on ? `Cluster ${n}: delivery paused.` : `Cluster ${n}: delivery resumed.`);
}

// A tile is a clone of one skeleton, filled in: cloning is several times cheaper than
// building 23 elements one by one, which is what keeps 1,000 new tiles quick. Its buttons
// have no listener of their own: the grid's one listener finds the cluster (onAction).
let skeleton = null;
const METERS = [['cpu', 'CPU', fmtCpu], ['memory', 'Memory', fmtBytes], ['pods', 'Pods', (v) => String(Math.round(v))]];

function tile(c) {
  if (!skeleton) {
    skeleton = h('article.tile', {},
      h('header', {}, h('span.name'), h('span.badge')), h('p.meta'), h('ul.chips', { 'aria-label': 'Taints and state' }),
      ...METERS.map(([, label]) => bar(label, 0, 0, '')),
      h('div.actions', {}, h('button', { type: 'button' }), h('button', { type: 'button' })));
  }
  const el = skeleton.cloneNode(true);
  const n = c.metadata.name;
  const [cls, text] = readiness(c);
  const spec = c.spec || {};
  const st = c.status || {};
  el.dataset.cluster = n;
  el.dataset.ready = cls;
  el.setAttribute('aria-label', `Cluster ${n}: ${text}`);
  const [head, meta, chips, ...rest] = el.children;
  head.firstChild.textContent = n;
  head.firstChild.title = n;
  head.lastChild.textContent = text;
  head.lastChild.classList.add(cls);
  meta.textContent = [spec.syncMode || 'Push', st.kubernetesVersion || '', [spec.region, spec.zone].filter(Boolean).join(' / ')]
    .filter(Boolean).join(' · ');
  for (const t of spec.taints || []) {
    chips.append(h('li.chip.taint', { title: `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}` },
      `${t.key.replace(/^cluster\.karmada\.io\//, '')}:${t.effect}`));
  }
  if (paused(c)) {
    const p = condition(c, 'Paused');
    const acked = p && p.status === 'True' && p.observedGeneration === c.metadata.generation;
    chips.append(h('li.chip.paused', {}, acked ? 'Paused' : 'Pausing…'));
  }
  if (!chips.firstChild) chips.remove();
  METERS.forEach(([res, , fmt], i) => {
    const m = rest[i], u = usage(c, res);
    if (!u) { m.remove(); return; }
    setBar(m, u.used, u.total, `${fmt(u.used)} / ${fmt(u.total)}`);
  });
  const [cb, pb] = rest[3].children;
  const isCordoned = cordoned(c), isPaused = paused(c);
  cb.dataset.action = isCordoned ? 'uncordon' : 'cordon';
  cb.textContent = isCordoned ? 'Uncordon' : 'Cordon';
  cb.setAttribute('aria-label', `${cb.textContent} ${n}`);
  pb.dataset.action = isPaused ? 'resume' : 'pause';
  pb.textContent = isPaused ? 'Resume' : 'Pause';
  pb.setAttribute('aria-label', `${pb.textContent} ${n}`);
  return el;
}

// The grid's one click listener: the tile's cluster as it is now, and the action.
function onAction(inf, e) {
  const b = e.target.closest('button[data-action]');
  const t = b && b.closest('.tile');
  const c = t && inf.items.get(t.dataset.cluster);
  if (!c) return;
  const a = b.dataset.action;
  if (a === 'cordon' || a === 'uncordon') cordon(c, a === 'cordon');
  else pause(c, a === 'pause');
}

function groupOf(c, by, labelKey) {
  const s = c.spec || {};
  if (by === 'region') return s.region || '(no region)';
  if (by === 'zone') return s.zone || (s.zones && s.zones[0]) || '(no zone)';
  if (by === 'mode') return s.syncMode || 'Push';
  if (by === 'label') {
    const l = (c.metadata.labels || {})[labelKey];
    return l === undefined ? `(no ${labelKey || 'label'})` : `${labelKey}=${l}`;
  }
  return '';
}

function matches(c, q, state) {
  if (q && !c.metadata.name.toLowerCase().includes(q) &&
      !Object.entries(c.metadata.labels || {}).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(q))) return false;
  const r = readiness(c)[0];
  if (state === 'ready') return r === 'ready';
  if (state === 'notready') return r !== 'ready';
  if (state === 'tainted') return ((c.spec && c.spec.taints) || []).length > 0;
  if (state === 'paused') return paused(c);
  return true;
}

export function mount(main) {
  const inf = informer(PATHS.clusters, { progressive: true }); // each tile stands alone
  const search = h('input', { type: 'search', id: 'fleet-search', placeholder: 'name or label=value' });
  const state = h('select', { id: 'fleet-state' },
    ...[['all', 'All'], ['ready', 'Ready'], ['notready', 'Not ready'], ['tainted', 'Tainted'], ['paused', 'Paused']]
      .map(([v, t]) => h('option', { value: v }, t)));
  const group = h('select', { id: 'fleet-group' },
    ...[['', 'Nothing'], ['region', 'Region'], ['zone', 'Zone'], ['mode', 'Sync mode'], ['label', 'Label']]
      .map(([v, t]) => h('option', { value: v }, t)));
  const labelKey = h('input', { type: 'text', id: 'fleet-label', placeholder: 'label key', disabled: true });
  const summary = h('p.summary', { id: 'fleet-summary', 'aria-live': 'polite' });
  const grid = h('div.groups', { id: 'fleet-grid', onclick: (e) => onAction(inf, e) });
  const sectionEls = new Map(); // grouping and group -> its container
  main.append(h('h1', {}, 'Fleet'),
    h('div.toolbar', { role: 'search' },
      h('label', { for: 'fleet-search' }, 'Search'), search,
      h('label', { for: 'fleet-state' }, 'Show'), state,
      h('label', { for: 'fleet-group' }, 'Group by'), group,
      h('label.visually-hidden', { for: 'fleet-label' }, 'Label key'), labelKey),
    summary, grid);

  const render = () => keepFocus(main, () => {
    performance.mark('fleet:render');
    if (inf.error) {
      summary.textContent = '';
      showAlert(`Clusters cannot be read: ${inf.error.message}`);
      return;
    }
    const seen = new Set();
    let ready = 0, tainted = 0, pausedN = 0, built = 0, more = false;
    const budget = grid.querySelector('.tile') ? BUILD_BUDGET : FIRST_BUDGET; // an empty page: show something first
    const q = search.value.trim().toLowerCase();
    const by = group.value;
    const groups = new Map();
    const all = [...inf.items.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    for (const c of all) {
      const n = c.metadata.name;
      seen.add(n);
      if (readiness(c)[0] === 'ready') ready++;
      if (((c.spec && c.spec.taints) || []).length) tainted++;
      if (paused(c)) pausedN++;
      if (!matches(c, q, state.value)) continue;
      let t = tiles.get(n);
      if (!t || t.rv !== c.metadata.resourceVersion) {
        if (built === budget) { // the rest in the next task: input stays answered
          more = true;
          if (!t) continue; // shown once built; a changed one keeps its old face until then
        } else {
          built++;
          t = { rv: c.metadata.resourceVersion, el: tile(c) };
          tiles.set(n, t);
        }
      }
      const g = groupOf(c, by, labelKey.value.trim());
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(t.el);
    }
    for (const n of tiles.keys()) if (!seen.has(n)) tiles.delete(n);
    summary.textContent = inf.synced
      ? `${all.length} clusters: ${ready} ready, ${all.length - ready} not ready, ${tainted} tainted, ${pausedN} paused`
      : `Loading… the first ${all.length} clusters`;
    // one container per group, kept from render to render, so a tile that stays keeps focus
    const sections = [...groups.keys()].sort().map((g) => {
      let sec = sectionEls.get(`${by}\u0000${g}`);
      if (!sec) {
        const list = h('div.tiles');
        sec = by ? h('section.group', { 'aria-label': g }, h('h2'), list) : list;
        sec.list = list;
        sectionEls.set(`${by}\u0000${g}`, sec);
      }
      if (by) sec.querySelector('h2').textContent = `${g} (${groups.get(g).length})`;
      syncChildren(sec.list, groups.get(g));
      return sec;
    });
    for (const k of [...sectionEls.keys()]) if (!sections.includes(sectionEls.get(k))) sectionEls.delete(k);
    if (!sections.length) sections.push(h('p.empty', {}, inf.synced ? 'No cluster matches.' : 'Loading…'));
    syncChildren(grid, sections);
    // for a PerformanceObserver (bench/ui_fleet.mjs); cleared at once, so nothing piles up
    performance.measure('fleet:render', 'fleet:render');
    performance.clearMarks('fleet:render');
    performance.clearMeasures('fleet:render');
    if (more && !again) again = setTimeout(() => { again = 0; render(); }, 0);
  });
  let again = 0;

  search.addEventListener('input', render);
  state.addEventListener('change', render);
  group.addEventListener('change', () => { labelKey.disabled = group.value !== 'label'; render(); });
  labelKey.addEventListener('input', render);
  const unsub = inf.subscribe(render);
  render();
  return () => { unsub(); release(inf); clearTimeout(again); again = -1; };
}
