// app.js drives gpucal's web calendar: one row per GPU, grouped by node,
// on the resource timeline of @event-calendar (EventCalendar, loaded before
// this file). It reads GET /api/v1/timeline, applies the filters here in the
// browser, listens on GET /api/v1/stream (server-sent events) and fetches
// again on every change, and books through POST /book. Strings come from
// the server (config.t), in the page's language.
(() => {
  'use strict';
  const cfg = JSON.parse(document.getElementById('gpucal-config').textContent);
  const T = cfg.t;
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const t0 = performance.now();

  // Views: a day (or ?days=N days) in hours, a week in quarter days.
  const VIEWS = {
    day: { view: 'resourceTimelineDay', slotDuration: '01:00', slotWidth: 56 },
    week: { view: 'resourceTimelineWeek', slotDuration: '06:00', slotWidth: 64 },
  };
  const days = Math.min(14, Math.max(1, parseInt(params.get('days') || '1', 10) || 1));
  const state = {
    view: params.get('view') === 'week' ? 'week' : 'day',
    zoom: 1,
    filters: { user: params.get('user') || '', project: '', type: '', model: '' },
    data: null,
    range: null,
    collapsed: new Set(),
    updates: 0,
    resourcesKey: '',
    loading: null,
  };

  const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const locale = cfg.lang === 'zh' ? 'zh-CN' : undefined;
  const fmtTime = new Intl.DateTimeFormat(locale, { weekday: 'short', hour: '2-digit', minute: '2-digit', hour12: false });
  const fmtRange = new Intl.DateTimeFormat(locale, { weekday: 'short', month: 'short', day: 'numeric' });
  const when = (s) => (s ? fmtTime.format(new Date(s)) : '');
  const span = (a, b) => `${when(a)} – ${when(b)}`;
  const dur = (secs) => {
    const m = Math.round(secs / 60);
    return m < 60 ? `${m}m` : `${Math.floor(m / 60)}h${m % 60 ? String(m % 60).padStart(2, '0') : ''}`;
  };
  const gib = (mib) => (mib ? `${Math.round(mib / 1024)} GiB` : '');

  // ---- the calendar --------------------------------------------------------

  const v = VIEWS[state.view];
  const options = {
    view: v.view,
    headerToolbar: { start: '', center: '', end: '' },
    height: 'auto',
    slotDuration: v.slotDuration,
    slotWidth: v.slotWidth,
    slotLabelFormat: state.view === 'day' ? { hour: '2-digit', minute: '2-digit', hour12: false } : { weekday: 'short', hour: '2-digit', hour12: false },
    locale,
    nowIndicator: true,
    scrollTime: `${String(Math.max(0, new Date().getHours() - 2)).padStart(2, '0')}:00:00`,
    selectable: Boolean(cfg.user),
    unselectAuto: false,
    resources: [],
    events: [],
    resourceLabelContent: resourceLabel,
    eventContent,
    eventDidMount,
    eventClick: (info) => showDetails(info.event.extendedProps.item),
    eventMouseEnter: (info) => showDetails(info.event.extendedProps.item),
    select: onSelect,
    resourceExpand: (info) => {
      const id = info.resource.id;
      if (state.collapsed.has(id)) state.collapsed.delete(id); else state.collapsed.add(id);
    },
    datesSet: (info) => {
      state.range = { start: info.start, end: info.end };
      const first = prefetched && prefetched.key === `${info.start.getTime()}/${info.end.getTime()}`;
      prefetched = null;
      const last = new Date(info.end - 1);
      $('range-title').textContent = info.end - info.start <= 86400000 ? fmtRange.format(info.start) : `${fmtRange.format(info.start)} – ${fmtRange.format(last)}`;
      if (!first) load(); // the first range's data came with the calendar
    },
  };
  // The library reads every option it is given: leave out what is unset.
  if (state.view === 'day' && days > 1) options.duration = { days };
  if (!locale) delete options.locale;
  let ec = null;

  // The first day's data is fetched while the page starts, and the
  // calendar is created with it: one render instead of three.
  let prefetched = null;
  if (state.view === 'day') {
    const start = new Date();
    start.setHours(0, 0, 0, 0);
    const end = new Date(start);
    end.setDate(end.getDate() + days);
    prefetched = { key: `${start.getTime()}/${end.getTime()}`, data: fetchTimeline(start, end) };
  }
  async function start() {
    if (prefetched) {
      try {
        state.data = await prefetched.data;
        const v = compute();
        options.resources = v.resources;
        options.events = v.events;
        state.resourcesKey = v.key;
        state.createdWithData = true;
      } catch (err) {
        prefetched = null;
        setLive(`${T.error}: ${err.message}`, 'error');
      }
    }
    ec = EventCalendar.create($('calendar'), options);
    if (state.data) render();
  }

  function resourceLabel(info) {
    const p = info.resource.extendedProps || {};
    if (p.gpu) {
      const g = p.gpu;
      const status = g.status && g.status !== 'idle' ? ` · ${esc(T[g.status] || g.status)}` : '';
      return { html: `<span class="gpu-name" data-gpu="${g.id}">GPU ${g.index}</span><span class="gpu-meta">${esc(g.model)} · ${gib(g.memory_mib)}${status}</span>` };
    }
    if (p.node) {
      const n = p.node;
      const models = [...new Set(n.gpus.map((g) => g.model))].join(', ');
      return { html: `<span class="node-name">${esc(n.name)}</span><span class="gpu-meta">${n.gpus.length} × ${esc(models)}${n.state && n.state !== 'ready' ? ' · ' + esc(n.state) : ''}</span>` };
    }
    return info.resource.title;
  }

  // An item's end as drawn: a job's bar runs to its P90 end, lighter after P50.
  const drawnEnd = (it) => (it.end_p90 && it.end_p90 > it.end ? it.end_p90 : it.end);
  const mine = (it) => cfg.user && it.owner === cfg.user;

  function classesOf(it) {
    const c = [`k-${it.kind}`];
    if (it.kind === 'job') c.push(it.planned ? 'planned' : 'running');
    if (it.job && it.job.preemptible) c.push('preemptible');
    if (it.job && it.job.prediction && it.job.prediction.drain) c.push('lent');
    if (mine(it)) c.push('mine');
    return c;
  }

  function toEvent(it) {
    const start = new Date(it.start);
    const end = new Date(drawnEnd(it));
    const styles = [];
    const len = end - start;
    if (it.kind === 'job' && len > 0) {
      styles.push(`--p50: ${(100 * (new Date(it.end) - start)) / len}%`);
      const d = it.job && it.job.prediction && it.job.prediction.drain;
      if (d) styles.push(`--drain: ${Math.min(100, Math.max(0, (100 * (new Date(d.deadline) - start)) / len))}%`);
    }
    return { id: it.id, resourceIds: it.gpus.map(String), start, end, classNames: classesOf(it), styles, extendedProps: { item: it } };
  }

  function label(it) {
    if (it.kind === 'reservation') return `${it.id} · ${it.owner}${it.project ? ' · ' + it.project : ''}${it.note ? ' — ' + it.note : ''}`;
    const j = it.job || {};
    const pct = j.progress ? ` · ${Math.round(j.progress.fraction * 100)}%` : '';
    return `${it.id} ${it.type || ''} · ${it.owner} — ${it.note || ''}${pct}${it.planned ? ' · ' + T.planned : ''}`;
  }

  function eventContent(info) {
    const it = info.event.extendedProps.item;
    if (!it) return undefined; // the selection being dragged
    let html = `<span class="ev-title">${esc(label(it))}</span>`;
    const j = it.job;
    if (j && j.progress && !it.planned) html += `<span class="ev-progress" style="width:${Math.round(j.progress.fraction * 100)}%"></span>`;
    if (j && j.prediction && j.prediction.drain) html += `<span class="ev-drain" title="${esc(T.drain)} ${esc(when(j.prediction.drain.deadline))}"></span>`;
    return { html };
  }

  function eventDidMount(info) {
    const it = info.event.extendedProps.item;
    if (!it) return;
    const el = info.el;
    el.tabIndex = 0;
    el.setAttribute('role', 'button');
    el.setAttribute('aria-label', `${label(it)}, ${span(it.start, drawnEnd(it))}`);
    el.dataset.item = it.id;
    el.addEventListener('focus', () => showDetails(it));
    el.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        showDetails(it, true);
      }
    });
  }

  // ---- data ------------------------------------------------------------------

  async function fetchTimeline(start, end) {
    const q = `from=${encodeURIComponent(start.toISOString())}&to=${encodeURIComponent(end.toISOString())}`;
    const t = performance.now();
    const res = await fetch(`/api/v1/timeline?${q}`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(await errorText(res));
    const data = await res.json();
    state.fetchMs = performance.now() - t;
    return data;
  }

  async function load() {
    if (!state.range || !ec) return;
    const { start, end } = state.range;
    const mine = (state.loading = fetchTimeline(start, end));
    try {
      const data = await mine;
      if (state.loading !== mine) return; // a newer load is on its way
      state.data = data;
      render();
    } catch (err) {
      setLive(`${T.error}: ${err.message}`, 'error');
    }
  }

  async function errorText(res) {
    try {
      const b = await res.json();
      return b.error.message;
    } catch {
      return `HTTP ${res.status}`;
    }
  }

  // compute turns the data and the filters into the calendar's resources
  // (nodes with their GPUs) and events.
  function compute() {
    const d = state.data;
    const f = state.filters;
    const nodes = d.nodes
      .map((n) => ({ ...n, gpus: n.gpus.filter((g) => !f.model || g.model === f.model) }))
      .filter((n) => n.gpus.length > 0);
    const resources = nodes.map((n) => ({
      id: `node:${n.name}`,
      title: n.name,
      expanded: !state.collapsed.has(`node:${n.name}`),
      extendedProps: { node: n },
      children: n.gpus.map((g) => ({ id: String(g.id), title: `${n.name} GPU ${g.index}`, extendedProps: { gpu: g } })),
    }));
    const shown = new Set(nodes.flatMap((n) => n.gpus.map((g) => g.id)));
    const events = d.items
      .filter((it) => (!f.user || it.owner === f.user) && (!f.project || it.project === f.project) &&
        (!f.type || (f.type === 'reservation' ? it.kind === 'reservation' : it.type === f.type)))
      .map((it) => ({ ...it, gpus: it.gpus.filter((g) => shown.has(g)) }))
      .filter((it) => it.gpus.length > 0)
      .map(toEvent);
    const key = JSON.stringify(resources.map((r) => [r.id, r.expanded, r.children.map((c) => [c.id, c.extendedProps.gpu.status])]));
    return { resources, events, key };
  }

  function render() {
    const d = state.data;
    fillFilters(d);
    const { resources, events, key } = compute();
    if (key !== state.resourcesKey) {
      ec.setOption('resources', resources);
      state.resourcesKey = key;
    }
    if (state.createdWithData) state.createdWithData = false; // drawn already
    else ec.setOption('events', events);
    document.body.dataset.items = String(new Set(events.map((ev) => ev.id)).size);
    renderMine(d);
    state.updates++;
    document.body.dataset.updates = String(state.updates);
    setLive(`${T.updated} ${new Date(d.now).toLocaleTimeString(locale, { hour12: false })}`, 'ok');
    if (state.updates === 1) {
      // The first render's cost, from navigation start: docs/performance.md.
      requestAnimationFrame(() => {
        document.body.dataset.firstRenderMs = String(Math.round(performance.now()));
        document.body.dataset.scriptMs = String(Math.round(performance.now() - t0));
        document.body.dataset.fetchMs = String(Math.round(state.fetchMs));
        document.body.dataset.ready = '1';
      });
    }
  }

  function fillFilters(d) {
    const opts = (id, values, labels = {}) => {
      const sel = $(id);
      const cur = sel.value;
      const have = [...sel.options].slice(1).map((o) => o.value).join('\n');
      if (have === values.join('\n')) return;
      sel.length = 1;
      for (const v of values) sel.add(new Option(labels[v] || v, v));
      sel.value = values.includes(cur) ? cur : '';
    };
    const sorted = (xs) => [...new Set(xs.filter(Boolean))].sort();
    opts('f-user', sorted([...d.items.map((i) => i.owner), state.filters.user]));
    opts('f-project', sorted(d.items.map((i) => i.project)));
    opts('f-type', ['reservation', ...sorted(d.items.map((i) => i.type))], { reservation: T.reservation });
    const models = sorted(d.nodes.flatMap((n) => n.gpus.map((g) => g.model)));
    opts('f-model', models);
    $('f-user').value = state.filters.user;
    if ($('b-model')) {
      opts('b-model', models);
      opts('b-node', d.nodes.map((n) => n.name));
      opts('b-project', d.user ? Object.keys(d.user.projects || {}).sort() : []);
    }
  }

  for (const k of ['user', 'project', 'type', 'model']) {
    $(`f-${k}`).addEventListener('change', (e) => {
      state.filters[k] = e.target.value;
      if (state.data) render();
    });
  }

  // ---- panels ----------------------------------------------------------------

  function gpuNames(ids) {
    const byID = new Map();
    for (const n of state.data.nodes) for (const g of n.gpus) byID.set(g.id, g);
    return ids.map((id) => byID.get(id)).filter(Boolean)
      .map((g) => `${g.node}/${g.index} (${g.model}, ${gib(g.memory_mib)})`);
  }

  function row(k, v) {
    return v === '' || v == null ? '' : `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`;
  }

  function showDetails(it, focus) {
    if (!it || !state.data) return;
    const j = it.job;
    let h = `<h3>${esc(it.kind === 'job' ? T.job : T.reservation)} ${esc(it.id)}${it.note ? ' — ' + esc(it.note) : ''}</h3><dl>`;
    h += row(T.owner, it.owner) + row(T.project, it.project) + row(T.state, it.state);
    h += row(T.starts, it.start_p90 && it.start_p90 !== it.start ? `${when(it.start)} (P90 ${when(it.start_p90)})` : when(it.start));
    h += row(T.ends, it.end_p90 && it.end_p90 !== it.end ? `${when(it.end)} (P90 ${when(it.end_p90)})` : when(it.end));
    h += row(T.gpus, gpuNames(it.gpus).join(', '));
    if (j) {
      h += row(T.type, j.type) + row(T.class, j.class + (j.preemptible ? ` · ${T.preemptible}` : ''));
      if (j.progress) h += row(T.progress, `${Math.round(j.progress.fraction * 100)}%`);
      const p = j.prediction;
      if (p) {
        const e = p.estimate;
        h += row(T.estimate, `P50 ${dur(e.p50_s)} · P90 ${dur(e.p90_s)} · ${T.source}: ${e.source || '?'}${e.samples ? ` (${e.samples} ${T.runs})` : ''}`);
        if (p.position) h += row(T.position, p.position);
        if (p.reason) h += row(T.reason, p.reason);
        if (p.drain) h += row(T.drain, `${when(p.drain.deadline)}${p.drain.reservation ? ` (${T.lentInto} ${p.drain.reservation})` : ''}`);
      }
    }
    h += '</dl>';
    if (it.kind === 'reservation' && cfg.user && (mine(it) || cfg.admin) && it.state === 'confirmed') {
      h += `<form class="cancel" method="post" action="/reservations/${esc(it.id)}/cancel"><input type="hidden" name="csrf" value="${esc(cfg.csrf)}"><button type="submit" class="danger">${esc(T.cancelBooking)}</button></form>`;
    }
    const box = $('details');
    box.innerHTML = h;
    const form = box.querySelector('form.cancel');
    if (form) form.addEventListener('submit', (e) => { e.preventDefault(); post(form.action, new FormData(form)).then(() => { box.innerHTML = `<p class="ok">${esc(T.cancelled)} ${esc(it.id)}</p>`; load(); }, (err) => { box.insertAdjacentHTML('beforeend', `<p class="error" role="alert">${esc(err.message)}</p>`); }); });
    if (focus) $('details-h').scrollIntoView({ block: 'nearest' });
  }

  function renderMine(d) {
    const box = $('mine');
    if (!d.mine) return;
    const li = [];
    for (const r of d.mine.reservations) {
      li.push(`<li><b>${esc(r.id)}</b> ${esc(span(r.start, r.end))} · ${r.gpus.length} × ${esc(r.model || r.gpus[0]?.model || 'GPU')}${r.note ? ' — ' + esc(r.note) : ''}</li>`);
    }
    for (const j of d.mine.jobs) {
      const p = j.prediction || {};
      const eta = j.state === 'queued'
        ? `${T.position} ${p.position || '?'} · ${T.starts} ${when(p.start_p50)}${p.start_p90 ? ` (P90 ${when(p.start_p90)})` : ''}`
        : `${T.running} · ${T.ends} ${when(p.end_p50)}${j.progress ? ` · ${Math.round(j.progress.fraction * 100)}%` : ''}`;
      li.push(`<li><b>${esc(j.id)}</b> ${esc(j.name)} · ${j.gpus} × ${esc(j.model || 'GPU')} · ${esc(eta)}</li>`);
    }
    box.innerHTML = li.length ? `<ul class="mine-list">${li.join('')}</ul>` : `<p class="hint">${esc(T.mineEmpty)}</p>`;
  }

  function setLive(text, kind) {
    const el = $('live');
    el.textContent = text;
    el.dataset.kind = kind;
  }

  // ---- toolbar -----------------------------------------------------------------

  function setView(name) {
    state.view = name;
    const v = VIEWS[name];
    ec.setOption('slotDuration', v.slotDuration);
    ec.setOption('slotLabelFormat', name === 'day' ? { hour: '2-digit', minute: '2-digit', hour12: false } : { weekday: 'short', hour: '2-digit', hour12: false });
    ec.setOption('slotWidth', Math.round(v.slotWidth * state.zoom));
    ec.setOption('duration', name === 'day' ? { days } : { weeks: 1 });
    ec.setOption('view', v.view);
    for (const b of document.querySelectorAll('[data-view]')) b.setAttribute('aria-pressed', String(b.dataset.view === name));
  }
  for (const b of document.querySelectorAll('[data-view]')) b.addEventListener('click', () => setView(b.dataset.view));
  for (const b of document.querySelectorAll('[data-view]')) b.setAttribute('aria-pressed', String(b.dataset.view === state.view));
  $('prev').addEventListener('click', () => ec.prev());
  $('next').addEventListener('click', () => ec.next());
  $('today').addEventListener('click', () => ec.setOption('date', new Date()));
  const zoom = (f) => {
    state.zoom = Math.min(4, Math.max(0.25, state.zoom * f));
    ec.setOption('slotWidth', Math.round(VIEWS[state.view].slotWidth * state.zoom));
  };
  $('zoom-in').addEventListener('click', () => zoom(1.5));
  $('zoom-out').addEventListener('click', () => zoom(1 / 1.5));
  document.addEventListener('keydown', (e) => {
    if (e.target.closest('input, select, textarea, dialog')) return;
    if (e.key === '+' || e.key === '=') zoom(1.5);
    else if (e.key === '-') zoom(1 / 1.5);
  });

  // ---- booking -----------------------------------------------------------------

  const dialog = $('book-dialog');
  const localInput = (d) => {
    const z = new Date(d.getTime() - d.getTimezoneOffset() * 60000);
    return z.toISOString().slice(0, 16);
  };

  function openBooking(pre) {
    if (!dialog) return;
    const now = new Date();
    now.setMinutes(0, 0, 0);
    const start = pre.start || new Date(now.getTime() + 3600000);
    const end = pre.end || new Date(start.getTime() + 3600000);
    $('b-gpus').value = pre.gpus || 1;
    $('b-model').value = pre.model || '';
    $('b-node').value = pre.node || '';
    $('b-start').value = localInput(start);
    $('b-end').value = localInput(end);
    $('b-tz').value = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
    const out = $('book-result');
    out.textContent = '';
    delete out.dataset.state;
    dialog.showModal();
    $('b-gpus').focus();
  }

  function onSelect(info) {
    const g = info.resource && info.resource.extendedProps && info.resource.extendedProps.gpu;
    ec.unselect();
    if (!g) return;
    openBooking({ gpus: 1, model: g.model, node: g.node, start: info.start, end: info.end });
  }

  async function post(url, body) {
    const res = await fetch(url, {
      method: 'POST', body: new URLSearchParams(body), credentials: 'same-origin',
      headers: { Accept: 'application/json', 'X-CSRF-Token': cfg.csrf },
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error((data.error && data.error.message) || `HTTP ${res.status}`);
      err.body = data.error || {};
      throw err;
    }
    return data;
  }

  if (dialog) {
    $('book-open').addEventListener('click', () => openBooking({}));
    $('book-close').addEventListener('click', () => dialog.close());
    $('book-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const fd = new FormData(e.target);
      fd.set('start', new Date($('b-start').value).toISOString());
      fd.set('end', new Date($('b-end').value).toISOString());
      const out = $('book-result');
      out.textContent = '…';
      try {
        const r = await post('/book', fd);
        out.dataset.state = 'booked';
        out.dataset.reservation = r.id;
        out.innerHTML = `<span class="ok">${esc(T.booked)} <b>${esc(r.id)}</b> ${esc(T.on)} ${esc(r.gpus.map((g) => `${g.node}/${g.index}`).join(', '))}, ${esc(span(r.start, r.end))}</span>`;
        load();
      } catch (err) {
        out.dataset.state = 'refused';
        let h = `<span class="error">${esc(T.notBooked)}: ${esc(err.message)}</span>`;
        const alts = err.body && err.body.alternatives;
        if (alts && alts.length) {
          h += `<p>${esc(T.alternatives)}</p><ul class="alts">`;
          alts.forEach((a, i) => { h += `<li>${a.gpus} × ${esc(a.model || 'GPU')} · ${esc(span(a.start, a.end))} <button type="button" data-alt="${i}">${esc(T.bookThis)}</button></li>`; });
          h += '</ul>';
        }
        out.innerHTML = h;
        for (const b of out.querySelectorAll('[data-alt]')) {
          b.addEventListener('click', () => {
            const a = alts[Number(b.dataset.alt)];
            $('b-gpus').value = a.gpus;
            $('b-model').value = a.model || '';
            if (a.kind === 'model') $('b-node').value = '';
            $('b-start').value = localInput(new Date(a.start));
            $('b-end').value = localInput(new Date(a.end));
            $('book-submit').focus();
          });
        }
      }
    });
  }

  // ---- live updates ------------------------------------------------------------

  let pending = null;
  const soon = () => {
    clearTimeout(pending);
    pending = setTimeout(load, 250);
  };
  const es = new EventSource('/api/v1/stream');
  es.addEventListener('change', soon);
  es.addEventListener('open', () => { $('live').dataset.stream = 'open'; });
  es.addEventListener('error', () => { $('live').dataset.stream = 'closed'; setLive(T.offline, 'warn'); });
  // A change made through another server replica reaches this one's
  // stream only with the leader's next replan (docs/web.md): fetch once a
  // minute as well, and whenever the page comes back into view.
  setInterval(load, 60000);
  document.addEventListener('visibilitychange', () => { if (!document.hidden) soon(); });
  start();
})();
