// suspension.js - the Suspension page: each PropagationPolicy with what it suspends and, for
// every cluster its bindings target, whether that cluster's executor acknowledged it: the
// Work's Dispatching condition at the Work's current generation (docs/suspension.md, "The
// pause contract"). Suspend and resume change spec.suspension as `flotilla ctl suspend
// policy NAME [--clusters a,b]` does: names are added to (resume: removed from)
// dispatchingOnClusters; all clusters is dispatching: true.
import { ApiError, PATHS, informer, objKey, release, update } from './api.js';
import { condition, confirmDialog, h, name, keepFocus, showAlert, syncChildren } from './dom.js';

const ES = 'karmada-es-';
const BINDING_ID = 'resourcebinding.karmada.io/permanent-id';

function suspensionOf(p) {
  const s = (p.spec && p.spec.suspension) || {};
  const names = (s.dispatchingOnClusters && s.dispatchingOnClusters.clusterNames) || [];
  return { all: s.dispatching === true, names };
}

function describe(p) {
  const s = suspensionOf(p);
  if (s.all) return 'Suspended on every cluster';
  if (s.names.length) return `Suspended on ${s.names.join(', ')}`;
  return 'Not suspended';
}

// spec.suspension after suspending (on) or resuming the clusters named (none: all); an
// Error when that makes no sense for what is there (the CLI's messages).
export function editSuspension(spec, on, names) {
  const s = spec.suspension || {};
  const all = s.dispatching === true;
  const have = (s.dispatchingOnClusters && s.dispatchingOnClusters.clusterNames) || [];
  if (on && !names.length) {
    s.dispatching = true;
    delete s.dispatchingOnClusters;
  } else if (on) {
    if (all) throw new Error('the policy already suspends dispatching to every cluster');
    s.dispatchingOnClusters = { ...(s.dispatchingOnClusters || {}), clusterNames: [...have, ...names.filter((n) => !have.includes(n))] };
  } else if (!names.length) {
    delete s.dispatching;
    delete s.dispatchingOnClusters;
  } else {
    if (all) throw new Error('the policy suspends dispatching to every cluster: resume it for all clusters first');
    const kept = have.filter((n) => !names.includes(n));
    if (kept.length) s.dispatchingOnClusters.clusterNames = kept;
    else delete s.dispatchingOnClusters;
  }
  if (Object.keys(s).length) spec.suspension = s;
  else delete spec.suspension;
}

const policyPath = (p) => `/apis/policy.karmada.io/v1alpha1/namespaces/${encodeURIComponent(p.metadata.namespace)}` +
  `/propagationpolicies/${encodeURIComponent(p.metadata.name)}`;

function bindingsOf(p, bindings) {
  const ns = p.metadata.namespace, n = p.metadata.name;
  return [...bindings.values()].filter((b) => {
    const a = b.metadata.annotations || {};
    return a['propagationpolicy.karmada.io/name'] === n && a['propagationpolicy.karmada.io/namespace'] === ns;
  });
}

function ackCell(work) {
  if (!work) return h('td', {}, h('span.ack.waiting', {}, 'no Work yet'));
  const d = condition(work, 'Dispatching');
  const suspended = !!(work.spec && work.spec.suspendDispatching);
  const current = d && d.observedGeneration === work.metadata.generation;
  let text, cls;
  if (suspended && current && d.status === 'False') { text = 'Suspended, acknowledged'; cls = 'acked'; }
  else if (suspended) { text = 'Suspending, waiting for the executor'; cls = 'waiting'; }
  else if (current && d.status === 'True') { text = 'Dispatching'; cls = 'running'; }
  else if (d && d.reason === 'ClusterPaused' && current) { text = 'Cluster paused, acknowledged'; cls = 'acked'; }
  else { text = 'Resuming, waiting for the executor'; cls = 'waiting'; }
  return h('td', {}, h(`span.ack.${cls}`, { title: d ? `${d.reason}: ${d.message || ''} (generation ${d.observedGeneration}/${work.metadata.generation})` : '' }, text));
}

function clusterPicker(names, checked, legend) {
  const boxes = names.map((n) => h('label.check', {},
    h('input', { type: 'checkbox', value: n, checked: checked.includes(n) }), ' ', name(n)));
  const allBox = h('input', { type: 'checkbox', value: '*', id: 'pick-all' });
  allBox.addEventListener('change', () => { for (const l of boxes) l.firstChild.disabled = allBox.checked; });
  const fs = h('fieldset.picker', {}, h('legend', {}, legend),
    h('label.check', {}, allBox, ' All clusters'), ...boxes);
  return { node: fs, picked: () => (allBox.checked ? [] : boxes.map((l) => l.firstChild).filter((i) => i.checked).map((i) => i.value)),
    all: () => allBox.checked };
}

async function change(p, on, targets) {
  const s = suspensionOf(p);
  const pool = on ? targets.filter((n) => !s.names.includes(n)) : s.names;
  const who = `${p.metadata.namespace}/${p.metadata.name}`;
  const pick = clusterPicker(pool, [], on ? 'Suspend dispatching to' : 'Resume dispatching to');
  const body = h('div', {}, h('p', {}, on
    ? `Nothing more reaches the chosen clusters for the templates of policy ${who} until it is resumed.`
    : `The latest desired state is applied once to the chosen clusters.`), pick.node);
  const title = `${on ? 'Suspend' : 'Resume'} policy ${who}`;
  if (!(await confirmDialog(title, body, on ? 'Suspend' : 'Resume'))) return;
  const names = pick.picked();
  if (!pick.all() && !names.length) {
    showAlert(`${title}: no cluster was chosen.`);
    return;
  }
  try {
    await update(policyPath(p), (obj) => { obj.spec = obj.spec || {}; editSuspension(obj.spec, on, names); });
    showAlert(`${title}: done${names.length ? ` for ${names.join(', ')}` : ' for every cluster'}; acknowledgements follow below.`, 'info');
  } catch (e) {
    showAlert(e instanceof ApiError ? `${title} was refused: ${e.message}` : `${title} failed: ${e.message}`);
  }
}

// What a policy's card shows depends on: the policy, its bindings, their Works (and, for a
// policy with no binding yet, the clusters to choose from). A card is rebuilt only when one
// of them changes, so a button keeps its focus while unrelated objects move.
function cardInputs(p, bindings, worksById, clusters) {
  const bs = bindingsOf(p, bindings);
  const works = bs.map((b) => worksById.get((b.metadata.labels || {})[BINDING_ID]) || new Map());
  const sig = [p.metadata.resourceVersion, ...bs.map((b) => b.metadata.resourceVersion),
    ...works.flatMap((m) => [...m.values()].map((w) => w.metadata.resourceVersion)),
    bs.length ? '' : [...clusters.keys()].join(',')].join('|');
  return { bs, works, sig };
}

function policyCard(p, { bs, works: worksOf }, clusters) {
  const targets = [...new Set(bs.flatMap((b) => ((b.spec && b.spec.clusters) || []).map((c) => c.name)))].sort();
  const pool = targets.length ? targets : [...clusters.keys()].sort();
  const s = suspensionOf(p);
  const rows = [];
  bs.forEach((b, i) => {
    const works = worksOf[i];
    for (const c of (b.spec && b.spec.clusters) || []) {
      const w = works.get(c.name);
      rows.push(h('tr', { 'data-cluster': c.name },
        h('th', { scope: 'row' }, name(`${b.spec.resource.kind} ${b.spec.resource.name}`)),
        h('td', {}, name(c.name)),
        h('td', {}, s.all || s.names.includes(c.name) ? 'suspended' : 'dispatching'),
        ackCell(w)));
    }
  });
  const who = objKey(p);
  return h('article.card', { 'data-policy': who, 'aria-label': `Policy ${who}` },
    h('header', {}, name(who), h('span.susp', { 'data-suspension': describe(p) }, describe(p))),
    h('div.actions', {},
      h('button', { type: 'button', 'data-action': 'suspend', disabled: s.all, onclick: () => change(p, true, pool),
        'aria-label': `Suspend policy ${who}` }, 'Suspend…'),
      h('button', { type: 'button', 'data-action': 'resume', disabled: !s.all && !s.names.length,
        onclick: () => (s.all ? resumeAll(p) : change(p, false, pool)), 'aria-label': `Resume policy ${who}` }, 'Resume…')),
    rows.length ? h('table.acks', {}, h('caption', {}, 'Per target cluster'),
      h('thead', {}, h('tr', {}, ...['Template', 'Cluster', 'Asked', 'Executor'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows)) : h('p.empty', {}, 'No template selected by this policy is propagated yet.'));
}

async function resumeAll(p) {
  const who = `${p.metadata.namespace}/${p.metadata.name}`;
  const title = `Resume policy ${who}`;
  if (!(await confirmDialog(title, h('p', {}, `Resume dispatching to every cluster for policy ${who}.`), 'Resume'))) return;
  try {
    await update(policyPath(p), (obj) => { obj.spec = obj.spec || {}; editSuspension(obj.spec, false, []); });
    showAlert(`${title}: done.`, 'info');
  } catch (e) {
    showAlert(e instanceof ApiError ? `${title} was refused: ${e.message}` : `${title} failed: ${e.message}`);
  }
}

export function mount(main) {
  const infs = [informer(PATHS.policies), informer(PATHS.bindings), informer(PATHS.works), informer(PATHS.clusters)];
  const [pol, bind, work, clus] = infs;
  const only = h('input', { type: 'checkbox', id: 'susp-only' });
  const list = h('div.cards', { id: 'susp-list' });
  const cards = new Map(); // policy -> { sig, el }
  main.append(h('h1', {}, 'Suspension'),
    h('div.toolbar', {}, h('label.check', { for: 'susp-only' }, only, ' Only policies that suspend something')), list);
  const render = () => keepFocus(main, () => {
    const err = infs.find((i) => i.error);
    if (err) showAlert(`${err.path} cannot be read: ${err.error.message}`);
    const worksById = new Map();
    for (const w of work.items.values()) {
      const id = (w.metadata.labels || {})[BINDING_ID];
      if (!id || !w.metadata.namespace.startsWith(ES)) continue;
      if (!worksById.has(id)) worksById.set(id, new Map());
      worksById.get(id).set(w.metadata.namespace.slice(ES.length), w);
    }
    const ps = [...pol.items.values()].sort((a, b) => (objKey(a) < objKey(b) ? -1 : 1))
      .filter((p) => !only.checked || describe(p) !== 'Not suspended');
    const seen = new Set();
    const out = ps.map((p) => {
      const key = objKey(p);
      seen.add(key);
      const inputs = cardInputs(p, bind.items, worksById, clus.items);
      let c = cards.get(key);
      if (!c || c.sig !== inputs.sig) {
        c = { sig: inputs.sig, el: policyCard(p, inputs, clus.items) };
        cards.set(key, c);
      }
      return c.el;
    });
    for (const k of cards.keys()) if (!seen.has(k)) cards.delete(k);
    syncChildren(list, out.length ? out : [h('p.empty', {}, pol.synced ? 'No PropagationPolicy.' : 'Loading…')]);
  });

  only.addEventListener('change', render);
  const unsubs = infs.map((i) => i.subscribe(render));
  render();
  return () => { unsubs.forEach((u) => u()); infs.forEach(release); };
}
