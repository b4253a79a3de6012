// workdiff.js - what a cluster really receives: the Work rendered for it (after overrides and
// replica division), diffed against the template, line by line. Read on demand, as the
// signed-in user, from the Work in the cluster's execution namespace (found by the binding's
// permanent-id label) and the template (its resource found through discovery).
import { get } from './api.js';
import { h } from './dom.js';

const BINDING_ID = 'resourcebinding.karmada.io/permanent-id';

// Karmada's bookkeeping on delivered objects (which policy, binding and Work they came
// from), and kubectl's copy of the last applied configuration: not what an override did.
const BOOKKEEPING = /(^|\.)karmada\.io\/|^kubectl\.kubernetes\.io\/last-applied-configuration$/;
const own = (kv) => (kv ? Object.fromEntries(Object.entries(kv).filter(([k]) => !BOOKKEEPING.test(k))) : undefined);

// The parts of an object a Work changes: labels, annotations, spec; keys sorted, so that
// the same content prints the same lines.
function comparable(o) {
  const m = { labels: own((o.metadata || {}).labels), annotations: own((o.metadata || {}).annotations) };
  const sorted = (v) => (Array.isArray(v) ? v.map(sorted)
    : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);
  return JSON.stringify(sorted({ metadata: { labels: m.labels, annotations: m.annotations }, spec: o.spec }), null, 2).split('\n');
}

// A line diff (longest common subsequence): [[' '|'-'|'+', line], ...].
export function diffLines(a, b) {
  const n = a.length, m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([' ', a[i]]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) out.push(['-', a[i++]]); else out.push(['+', b[j++]]);
  }
  while (i < n) out.push(['-', a[i++]]);
  while (j < m) out.push(['+', b[j++]]);
  return out;
}

async function templatePath(r) {
  const [group, version] = r.apiVersion.includes('/') ? r.apiVersion.split('/') : ['', r.apiVersion];
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const d = await get(base);
  const res = (d.resources || []).find((x) => x.kind === r.kind && !x.name.includes('/'));
  if (!res) throw new Error(`the API serves no ${r.kind} in ${r.apiVersion}`);
  return `${base}/${res.namespaced ? `namespaces/${encodeURIComponent(r.namespace)}/` : ''}${res.name}/${encodeURIComponent(r.name)}`;
}

export async function renderedDiff(b, cluster) {
  const r = b.spec.resource;
  const id = (b.metadata.labels || {})[BINDING_ID];
  const works = await get(`/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-${encodeURIComponent(cluster)}/works?labelSelector=${encodeURIComponent(`${BINDING_ID}=${id}`)}`);
  const w = (works.items || [])[0];
  if (!w) return h('p.empty', {}, `No Work for ${cluster} yet.`);
  const manifest = (((w.spec || {}).workload || {}).manifests || [])[0] || {};
  const template = await get(await templatePath(r));
  const lines = diffLines(comparable(template), comparable(manifest));
  const changed = lines.filter(([k]) => k !== ' ').length;
  return h('div.work-diff', { 'data-cluster': cluster },
    h('p', {}, `Work ${w.metadata.namespace}/${w.metadata.name} against the template: ${changed ? `${changed} lines differ` : 'no difference'} (labels, annotations and spec; Karmada's bookkeeping left out).`),
    h('pre', { tabindex: 0, 'aria-label': `Differences for ${cluster}` }, ...lines.map(([k, l]) =>
      h(`span.${k === '+' ? 'add' : k === '-' ? 'del' : 'same'}`, {}, `${k} ${l}\n`))));
}
