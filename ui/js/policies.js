// policies.js - the Policies page: every PropagationPolicy and ClusterPropagationPolicy with
// what it selects and where it sends it (cluster affinity, replica scheduling, spread), how
// many templates it holds now (its bindings), and every OverridePolicy and
// ClusterOverridePolicy with what it selects, for which clusters, and which overriders.
// Read-only; live from watches.
import { PATHS, informer, objKey, release } from './api.js';
import { h, name, showAlert } from './dom.js';

const P = '/apis/policy.karmada.io/v1alpha1';
const SOURCES = {
  pp: `${P}/propagationpolicies`, cpp: `${P}/clusterpropagationpolicies`,
  op: `${P}/overridepolicies`, cop: `${P}/clusteroverridepolicies`,
};

// A namespaced policy selects in its own namespace whatever its selectors say.
function selects(p) {
  const spec = p.spec || {};
  return (spec.resourceSelectors || []).map((r) => {
    const ns = r.namespace || p.metadata.namespace;
    return r.name ? `${r.kind} ${ns ? `${ns}/` : ''}${r.name}`
      : r.labelSelector ? `${r.kind} with ${labels(r.labelSelector)}${ns ? ` in ${ns}` : ''}`
        : `every ${r.kind}${ns ? ` in ${ns}` : ''}`;
  }).join('; ') || '—';
}

function labels(sel) {
  const m = Object.entries((sel && sel.matchLabels) || {}).map(([k, v]) => `${k}=${v}`);
  const e = ((sel && sel.matchExpressions) || []).map((x) => `${x.key} ${x.operator}${x.values ? ` (${x.values.join(',')})` : ''}`);
  return [...m, ...e].join(', ') || 'any labels';
}

function clusters(aff) {
  if (!aff) return 'every cluster';
  const parts = [];
  if (aff.clusterNames && aff.clusterNames.length) parts.push(aff.clusterNames.join(', '));
  if (aff.labelSelector) parts.push(`clusters with ${labels(aff.labelSelector)}`);
  if (aff.exclude && aff.exclude.length) parts.push(`not ${aff.exclude.join(', ')}`);
  return parts.join('; ') || 'every cluster';
}

function placement(spec) {
  const pl = (spec && spec.placement) || {};
  const out = [];
  if (pl.clusterAffinities && pl.clusterAffinities.length) {
    out.push(pl.clusterAffinities.map((a) => `${a.affinityName}: ${clusters(a)}`).join(' → '));
  } else {
    out.push(clusters(pl.clusterAffinity));
  }
  const rs = pl.replicaScheduling;
  if (rs) out.push(rs.replicaSchedulingType === 'Divided' ? `divided${rs.replicaDivisionPreference ? ` (${rs.replicaDivisionPreference})` : ''}` : 'duplicated');
  for (const sc of pl.spreadConstraints || []) out.push(`spread by ${sc.spreadByField || sc.spreadByLabel}: ${sc.minGroups || 1}–${sc.maxGroups || '∞'}`);
  return out.join(' · ');
}

function overrides(spec) {
  const rules = (spec && spec.overrideRules) ||
    (spec && spec.overriders ? [{ targetCluster: spec.targetCluster, overriders: spec.overriders }] : []);
  return rules.map((r) => `${clusters(r.targetCluster)}: ${Object.keys(r.overriders || {}).join(', ') || 'nothing'}`).join('; ') || '—';
}

function table(caption, cols, rows, id) {
  return h('section', { 'aria-labelledby': `${id}-h` },
    h('h2', { id: `${id}-h` }, caption),
    rows.length ? h('div.scroll', {}, h('table', { id },
      h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows))) : h('p.empty', {}, 'None.'));
}

export function mount(main) {
  const infs = Object.fromEntries(Object.entries(SOURCES).map(([k, p]) => [k, informer(p)]));
  const bind = informer(PATHS.bindings);
  const body = h('div', { id: 'policies' });
  main.append(h('h1', {}, 'Policies'), body);
  const render = () => {
    const err = [...Object.values(infs), bind].find((i) => i.error);
    if (err) showAlert(`${err.path} cannot be read: ${err.error.message}`);
    const held = new Map(); // "ns/name" of a PropagationPolicy -> bindings
    for (const b of bind.items.values()) {
      const a = b.metadata.annotations || {};
      const k = a['propagationpolicy.karmada.io/name'] ? `${a['propagationpolicy.karmada.io/namespace']}/${a['propagationpolicy.karmada.io/name']}`
        : a['clusterpropagationpolicy.karmada.io/name'] ? `cluster:${a['clusterpropagationpolicy.karmada.io/name']}` : null;
      if (k) held.set(k, (held.get(k) || 0) + 1);
    }
    const sorted = (inf) => [...inf.items.values()].sort((a, b) => (objKey(a) < objKey(b) ? -1 : 1));
    const prow = (p, cluster) => {
      const key = cluster ? `cluster:${p.metadata.name}` : objKey(p);
      const s = (p.spec && p.spec.suspension) || {};
      return h('tr', { 'data-policy': cluster ? p.metadata.name : objKey(p) },
        h('th', { scope: 'row' }, name(cluster ? p.metadata.name : objKey(p))),
        h('td', {}, selects(p)),
        h('td', {}, placement(p.spec)),
        h('td', {}, String((p.spec && p.spec.priority) || 0)),
        h('td', { 'data-held': held.get(key) || 0 }, String(held.get(key) || 0)),
        h('td', {}, s.dispatching ? 'every cluster' : ((s.dispatchingOnClusters || {}).clusterNames || []).join(', ') || '—'));
    };
    const orow = (p, cluster) => h('tr', { 'data-policy': cluster ? p.metadata.name : objKey(p) },
      h('th', { scope: 'row' }, name(cluster ? p.metadata.name : objKey(p))),
      h('td', {}, selects(p)),
      h('td', {}, overrides(p.spec)));
    const pcols = ['Policy', 'Selects', 'Sends to', 'Priority', 'Templates', 'Suspended on'];
    body.replaceChildren(
      table('PropagationPolicies', pcols, sorted(infs.pp).map((p) => prow(p, false)), 'pp-table'),
      table('ClusterPropagationPolicies', pcols, sorted(infs.cpp).map((p) => prow(p, true)), 'cpp-table'),
      table('OverridePolicies', ['Policy', 'Selects', 'Overrides'], sorted(infs.op).map((p) => orow(p, false)), 'op-table'),
      table('ClusterOverridePolicies', ['Policy', 'Selects', 'Overrides'], sorted(infs.cop).map((p) => orow(p, true)), 'cop-table'));
  };
  const all = [...Object.values(infs), bind]; // five watches: the most a page may hold (api.js)
  const unsubs = all.map((i) => i.subscribe(render));
  render();
  return () => { unsubs.forEach((u) => u()); all.forEach(release); };
}
