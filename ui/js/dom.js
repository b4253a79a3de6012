// dom.js - small helpers the pages share: element building (text only, never HTML strings,
// so no name from the API can inject markup), the alert line, the confirmation dialog,
// quantities and conditions.

// h('div.tile', {attrs}, child, ...): an element; a class list after dots; children are
// nodes or strings (as text).
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function showAlert(message, kind = 'error') {
  const a = document.getElementById('alert');
  a.textContent = message;
  a.dataset.kind = kind;
  a.hidden = !message;
}

// Ask before an action: resolves true when confirmed. body is a node (it may hold inputs the
// caller reads after).
export function confirmDialog(title, body, okLabel = 'Confirm') {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  const slot = document.getElementById('confirm-body');
  slot.replaceChildren(body);
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  ok.textContent = okLabel;
  return new Promise((resolve) => {
    const done = (v) => {
      ok.removeEventListener('click', onOk);
      cancel.removeEventListener('click', onCancel);
      dlg.removeEventListener('cancel', onCancel);
      if (dlg.open) dlg.close();
      resolve(v);
    };
    const onOk = () => done(true);
    const onCancel = (e) => { if (e) e.preventDefault(); done(false); };
    ok.addEventListener('click', onOk);
    cancel.addEventListener('click', onCancel);
    dlg.addEventListener('cancel', onCancel);
    dlg.showModal();
    cancel.focus();
  });
}

const SUFFIX = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
  n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

// A Kubernetes quantity ("500m", "96Gi", "1e3") as a number; NaN when it is not one.
export function quantity(q) {
  if (q === undefined || q === null) return NaN;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m) return NaN;
  const mult = m[2] ? SUFFIX[m[2]] : 1;
  return mult === undefined ? NaN : parseFloat(m[1]) * mult;
}

export function condition(obj, type) {
  const cs = (obj && obj.status && obj.status.conditions) || [];
  return cs.find((c) => c.type === type);
}

export function age(ts) {
  if (!ts) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  if (s < 90) return `${s}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 129600) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

// A bar with a label: used/total as a filled share. The track draws its fill itself (a
// gradient up to --fill-pct, set by setBar), one element fewer per bar than a fill inside
// it: the Fleet page has three bars on each of 1,000 tiles.
export function bar(label, used, total, text) {
  const track = h('span.track');
  const m = h('div.meter', { role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': 100 },
    h('span.meter-label', {}, label), track, h('span.meter-text'));
  setBar(m, used, total, text);
  return m;
}

// Set a bar made by bar() to used/total, with text beside it (and as its aria-valuetext).
export function setBar(m, used, total, text) {
  const pct = total > 0 && used >= 0 ? Math.min(100, (100 * used) / total) : 0;
  const track = m.children[1];
  m.setAttribute('aria-valuenow', Math.round(pct));
  m.setAttribute('aria-valuetext', text);
  track.style.setProperty('--fill-pct', `${pct.toFixed(1)}%`);
  track.classList.toggle('hot', pct >= 90);
  m.children[2].textContent = text;
}

// A text that may be long: ellipsized by CSS, whole in the title.
export function name(text, cls = 'name') {
  return h(`span.${cls}`, { title: text }, text);
}

// A stable colour index for a cluster name, so each cluster keeps its colour in every bar.
export function colourOf(s) {
  let x = 0;
  for (let i = 0; i < s.length; i++) x = (x * 31 + s.charCodeAt(i)) >>> 0;
  return x % 8;
}

// Make parent's children exactly nodes, in order, moving only what is out of place: a node
// that stays where it is keeps its focus (replaceChildren would detach every one).
export function syncChildren(parent, nodes) {
  let cur = parent.firstChild;
  for (const n of nodes) {
    if (cur === n) {
      cur = cur.nextSibling;
      continue;
    }
    parent.insertBefore(n, cur);
  }
  while (cur) {
    const next = cur.nextSibling;
    parent.removeChild(cur);
    cur = next;
  }
}

// Run fn, which may rebuild parts of root; if the focused control was in a rebuilt part, focus
// its counterpart in the new one (same object key and data-action), for keyboard users.
export function keepFocus(root, fn) {
  const a = document.activeElement;
  const holder = a && root.contains(a) ? a.closest('[data-cluster],[data-policy],[data-binding]') : null;
  const action = a && a.dataset ? a.dataset.action : undefined;
  const keyAttr = holder && ['data-cluster', 'data-policy', 'data-binding'].find((k) => holder.hasAttribute(k));
  const key = keyAttr && holder.getAttribute(keyAttr);
  fn();
  if (!key || !action || root.contains(a)) return;
  const sel = `[${keyAttr}="${CSS.escape(key)}"] [data-action]`;
  const next = [...root.querySelectorAll(sel)].find((b) => b.dataset.action === action) ||
    root.querySelector(sel);
  if (next) next.focus();
}
