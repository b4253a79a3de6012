// events.js - the Events page: the newest Events of every namespace, live from a watch,
// filtered by text (reason, object, message) and type (Normal, Warning).
import { PATHS, informer, release } from './api.js';
import { age, h, name, showAlert } from './dom.js';

const SHOWN = 500; // the newest this many: the page stays fast whatever the store holds

const when = (e) => e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) || e.firstTimestamp ||
  e.metadata.creationTimestamp || '';

export function mount(main) {
  const inf = informer(PATHS.events);
  const search = h('input', { type: 'search', id: 'events-search', placeholder: 'reason, object or message' });
  const type = h('select', { id: 'events-type' }, h('option', { value: '' }, 'All'),
    h('option', { value: 'Normal' }, 'Normal'), h('option', { value: 'Warning' }, 'Warning'));
  const body = h('tbody', { id: 'events-body' });
  const summary = h('p.summary', { 'aria-live': 'polite' });
  main.append(h('h1', {}, 'Events'),
    h('div.toolbar', { role: 'search' }, h('label', { for: 'events-search' }, 'Filter'), search,
      h('label', { for: 'events-type' }, 'Type'), type),
    summary,
    h('div.scroll', {}, h('table.events', {}, h('caption.visually-hidden', {}, 'Events, newest first'),
      h('thead', {}, h('tr', {}, ...['Age', 'Type', 'Reason', 'Object', 'Message', 'Count'].map((t) => h('th', { scope: 'col' }, t)))),
      body)));
  const render = () => {
    if (inf.error) {
      showAlert(`Events cannot be read: ${inf.error.message}`);
      return;
    }
    const q = search.value.trim().toLowerCase();
    const all = [...inf.items.values()].sort((a, b) => (when(a) < when(b) ? 1 : when(a) > when(b) ? -1 : 0));
    const rows = [];
    for (const e of all) {
      if (rows.length >= SHOWN) break;
      if (type.value && e.type !== type.value) continue;
      const io = e.involvedObject || e.regarding || {};
      const obj = `${(io.kind || '').toLowerCase()}/${io.namespace ? `${io.namespace}/` : ''}${io.name || ''}`;
      if (q && !`${e.reason} ${obj} ${e.message || e.note || ''}`.toLowerCase().includes(q)) continue;
      rows.push(h('tr', { 'data-reason': e.reason || '' },
        h('td', {}, h('time', { datetime: when(e) }, age(when(e)))),
        h('td', {}, h(`span.type.${(e.type || 'Normal').toLowerCase()}`, {}, e.type || 'Normal')),
        h('td', {}, e.reason || ''),
        h('td', {}, name(obj)),
        h('td.msg', {}, e.message || e.note || ''),
        h('td', {}, String(e.count || (e.series && e.series.count) || 1))));
    }
    summary.textContent = `${all.length} events${rows.length < all.length ? `, ${rows.length} shown` : ''}`;
    body.replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 6 }, inf.synced ? 'No event matches.' : 'Loading…'))]));
  };
  search.addEventListener('input', render);
  type.addEventListener('change', render);
  const unsub = inf.subscribe(render);
  render();
  return () => { unsub(); release(inf); };
}
