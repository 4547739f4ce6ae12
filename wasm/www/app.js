// mapwise viewer: the page. All reading and parsing happens in the
// worker (worker.js → the WebAssembly module); this file draws what it
// answers. No bundler, no framework: plain ES modules.
//
// Numbers from the module: every u64/i64 arrives as a BigInt (exact page
// ids, txids, checksums); positions passed back are plain numbers.

const $ = (id) => document.getElementById(id);

const MIN_CELL = 10; // map cell size in CSS pixels (1 pixel of it is the gap)
const MAX_CELL = 28; // cells grow up to this when a small file leaves room
const MAX_ROWS = 40; // map rows on screen
const BUCKETS_PER_SCREEN = 100;
const KEYS_PER_SCREEN = 50;
const ENTRIES_PER_SCREEN = 50;
const ROWS_PER_SCREEN = 20;
const HEX_BYTES = 4096;
const NO_KIND = 255;

// ---------------------------------------------------------------- worker

let worker = null;
let nextId = 1;
const pending = new Map();
let kinds = []; // [{ index, name, color }] in legend order
let moduleVersion = '';

function startWorker() {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (event) => {
    const m = event.data;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.memory) state.memory = Math.max(state.memory, m.memory);
    if (m.ok) {
      p.resolve(m.value);
    } else {
      if (m.broken) restartWorker();
      p.reject(new Error(m.error));
    }
  };
  worker.onerror = (event) => {
    const msg = event.message || 'the viewer worker could not start (is pkg/ built? run `cargo xtask wasm`)';
    for (const p of pending.values()) p.reject(new Error(msg));
    pending.clear();
    showError(`The viewer's worker failed: ${msg}`);
  };
}

function restartWorker() {
  worker.terminate();
  for (const p of pending.values()) p.reject(new Error('the viewer restarted after an internal error'));
  pending.clear();
  state.open = false;
  startWorker();
  call('hello').catch(() => {});
}

function call(op, ...args) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, args });
  });
}

// ----------------------------------------------------------------- state

const state = {
  gen: 0, // bumped by every open; answers for an older file are dropped
  open: false,
  summary: null,
  unit: 4096,
  pages: 0,
  perCell: 1,
  fit: 1,
  cell: MIN_CELL,
  cols: 1,
  rows: 1,
  totalRows: 0,
  scrollRow: 0,
  cells: null,
  selected: null, // selected map page (first page of the selected cell)
  hoverCell: -1,
  memory: 0, // wasm memory in bytes (it never shrinks: this is the peak)
  opens: 0,
  lastOpen: null,
  // A loaded residency trace: { summary, index, frame, levels, playing,
  // clockUs, speed, loads } (levels: per visible cell, 0 none … 3 all,
  // 255 past the file's end at that moment); null when none.
  trace: null,
  traceLoads: 0,
};
let drawSeq = 0;
let hoverSeq = 0;
let detailSeq = 0;

// Read by the browser test and handy in the console.
window.mapwise = {
  get state() {
    return state;
  },
  call,
};

// ------------------------------------------------------------ formatting

const num = (v) => Number(v);
const fmtInt = (v) => (typeof v === 'bigint' ? v.toLocaleString('en-US') : Number(v).toLocaleString('en-US'));

function human(bytes) {
  let v = Number(bytes);
  if (v < 1024) return `${v} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v >= 100 || Math.abs(v - Math.round(v)) < 0.05 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

function share(bytes, total) {
  const p = (100 * num(bytes)) / total;
  return p > 0 && p < 0.1 ? '<0.1 %' : `${p.toFixed(1)} %`;
}

const plural = (n, one, many) => `${fmtInt(n)} ${num(n) === 1 ? one : many}`;
const hex16 = (v) => BigInt.asUintN(64, BigInt(v)).toString(16).padStart(16, '0');
const isoTime = (secs) => new Date(num(secs) * 1000).toISOString().replace('T', ' ').replace('.000Z', ' UTC');

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k in e && k !== 'list') e[k] = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(head, rows, cls = 'grid') {
  return el(
    'table',
    { class: cls },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows),
  );
}

// ---------------------------------------------------------------- errors

function showError(text) {
  const box = $('error');
  box.replaceChildren(el('strong', { text: 'Error: ' }), text, el('br'), el('span', { class: 'dim', text: 'Open another file to go on.' }));
  box.hidden = false;
}

function hideError() {
  $('error').hidden = true;
  $('error').replaceChildren();
}

function setStatus(text) {
  $('status').textContent = text;
}

// ------------------------------------------------------------------ open

async function openFile(file) {
  const gen = ++state.gen;
  const t0 = performance.now();
  hideError();
  setStatus(`Opening ${file.name} (${human(file.size)})…`);
  let summary;
  try {
    summary = await call('open', file);
  } catch (e) {
    if (gen !== state.gen) return;
    clearViews();
    showError(`Could not open ${file.name}: ${e.message}`);
    finishOpen(gen, { ok: false, name: file.name, error: e.message, elapsedMs: performance.now() - t0 });
    return;
  }
  if (gen !== state.gen) return;
  state.open = true;
  state.summary = summary;
  state.unit = num(summary.unit);
  state.pages = num(summary.pages);
  state.selected = null;
  state.scrollRow = 0;
  state.hoverCell = -1;
  closeTrace();
  renderFacts(summary);
  renderLegend(summary);
  $('file-section').hidden = false;
  $('views').hidden = false;
  $('hover').textContent = '';
  $('detail').replaceChildren(el('p', { class: 'hint', text: 'Click a cell of the map (or press Enter on it) to decode its page.' }));
  $('structure').replaceChildren();
  if (summary.fatal) showError(`${file.name}: ${summary.fatal}`);
  layoutMap(true);
  await drawMap(gen);
  await new Promise((r) => requestAnimationFrame(() => r()));
  if (gen !== state.gen) return;
  const firstPaintMs = performance.now() - t0;
  finishOpen(gen, {
    ok: true,
    name: file.name,
    format: summary.format,
    firstPaintMs,
    openMs: summary.open_ms,
    reads: summary.reads,
    size: num(summary.size),
  });
  renderStructure(gen).catch((e) => {
    if (gen === state.gen) $('structure').replaceChildren(el('p', { class: 'bad', text: e.message }));
  });
}

function finishOpen(gen, info) {
  state.opens++;
  info.memory = state.memory;
  state.lastOpen = info;
  const st = $('status');
  st.dataset.opens = String(state.opens);
  st.dataset.wasmBytes = String(state.memory);
  if (info.ok) {
    st.dataset.firstPaintMs = info.firstPaintMs.toFixed(1);
    // `bytes` counts every byte fetched, re-reads of blocks the small
    // block cache dropped included; `distinct` the file bytes fetched at
    // least once (never more than the file).
    const r = info.reads;
    const reads = r
      ? ` · ${plural(r.reads, 'read', 'reads')} fetched ${human(r.bytes)} (${human(r.distinct)} distinct of ${human(info.size)})`
      : '';
    setStatus(
      `${info.name}: opened in ${info.openMs.toFixed(0)} ms, first paint after ${info.firstPaintMs.toFixed(0)} ms${reads} · wasm memory ${human(state.memory)} · mapwise-wasm ${moduleVersion}`,
    );
  } else {
    setStatus(`${info.name}: could not be opened · wasm memory ${human(state.memory)}`);
  }
}

function clearViews() {
  state.open = false;
  state.summary = null;
  state.pages = 0;
  $('file-section').hidden = true;
  $('views').hidden = true;
  $('facts').replaceChildren();
  $('structure').replaceChildren();
  $('detail').replaceChildren();
  $('hover').textContent = '';
}

// ----------------------------------------------------------------- facts

const FORMAT_NAMES = {
  bolt: 'bbolt',
  revlog: 'Mercurial revlog index',
  rrd: 'RRDtool',
  unknown: 'unknown (no parser recognised the bytes)',
};

function renderFacts(s) {
  const rows = [
    ['File', s.name],
    ['Format', FORMAT_NAMES[s.format] || s.format],
    ['Size', `${fmtInt(s.size)} bytes (${human(s.size)})`],
    ['Page size', s.page_size ? `${fmtInt(s.page_size)} bytes` : `none (map pages of ${human(s.unit)})`],
    ['Map pages', fmtInt(s.pages)],
  ];
  const f = s.facts;
  if (f.bolt) {
    const b = f.bolt;
    rows.push(
      ['Meta in use', `meta ${b.meta}`],
      ['Txid', b.txid.toString()],
      ['Root page', b.root.toString()],
      ['High-water mark', `${fmtInt(b.hwm)} pages`],
      ['Freelist', b.freelist],
      ['Buckets', fmtInt(b.buckets)],
      ['Keys', fmtInt(b.keys)],
      ['Checksum', hex16(b.checksum)],
      ['Meta pages', b.metas.map((m) => (m.fault ? `meta ${m.index}: invalid (${m.fault})` : `meta ${m.index}: txid ${m.txid}`)).join('; ')],
    );
  }
  if (f.revlog) {
    const r = f.revlog;
    const v = r.version === null || r.version === undefined ? 'unreadable' : r.version === 1 ? 'v1 (RevlogNG)' : `v${r.version}`;
    rows.push(
      ['Revlog version', v],
      ['Inline data', r.inline ? 'yes' : 'no'],
      ['Generaldelta', r.generaldelta ? 'yes' : 'no'],
      ['Revisions', fmtInt(r.revisions)],
      ['Data bytes', fmtInt(r.data_bytes)],
    );
  }
  if (f.rrd) {
    const r = f.rrd;
    rows.push(
      ['RRD version', r.version],
      ['Step', `${r.step} s`],
      ['Data sources', `${r.ds.length} (${r.ds.map((d) => d.name).join(', ')})`],
      ['Archives', String(r.rras.length)],
      ['Last update', `${r.last_update} (${isoTime(r.last_update)})`],
    );
  }
  $('facts').replaceChildren(...rows.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', { text: v }))));
  const probs = $('problems');
  const n = num(s.problem_count);
  if (n || s.warnings.length) {
    probs.hidden = false;
    probs.open = n > 0 && n <= 10;
    $('problems-title').textContent = `${plural(n, 'problem', 'problems')} found${s.warnings.length ? `, ${plural(s.warnings.length, 'warning', 'warnings')}` : ''}`;
    $('problem-list').replaceChildren(
      ...s.problems.map((p) => el('li', { text: p })),
      ...(n > s.problems.length ? [el('li', { class: 'dim', text: `… and ${fmtInt(n - s.problems.length)} more` })] : []),
      ...s.warnings.map((w) => el('li', { class: 'warning', text: `warning: ${w}` })),
    );
  } else {
    probs.hidden = true;
  }
}

function kindColor(index) {
  return kinds[index] ? kinds[index].color : '#ffffff';
}

function renderLegend(s) {
  const size = Math.max(1, num(s.size));
  // Every format counts the distinct map pages each kind's regions touch
  // (Layout::kind_counts in mapwise-core, as `inspector layout` does): a
  // page holding two kinds counts for both, so the column can sum to more
  // than the map's pages.
  const head = $('legend').tHead.rows[0].cells[1];
  head.textContent = 'pages';
  head.title = `${human(state.unit)} map pages each kind touches; a page holding several kinds counts for each`;
  const rows = s.kinds.map((k) =>
    el(
      'tr',
      { 'data-kind': k.kind },
      el('td', {}, el('span', { class: 'swatch', style: `background:${kindColor(k.index)}`, 'aria-hidden': 'true' }), k.kind),
      el('td', { class: 'count', text: fmtInt(k.pages) }),
      el('td', { text: human(k.bytes) }),
      el('td', { text: share(k.bytes, size) }),
    ),
  );
  $('legend').tBodies[0].replaceChildren(...rows);
}

function mapSummaryText() {
  const s = state.summary;
  if (!s) return '';
  if (state.pages === 0) return `${s.name} is empty: no pages.`;
  const size = Math.max(1, num(s.size));
  const parts = [...s.kinds]
    .sort((a, b) => num(b.bytes) - num(a.bytes))
    .map((k) => `${k.kind} ${share(k.bytes, size)}`);
  const cells = Math.ceil(state.pages / state.perCell);
  const probs = num(s.problem_count);
  return (
    `${s.name}: ${fmtInt(state.pages)} pages of ${human(state.unit)} (${human(s.size)}), ` +
    `drawn as ${fmtInt(cells)} cells of ${plural(state.perCell, 'page', 'pages')}. ` +
    `By bytes: ${parts.join(', ')}. ` +
    (probs
      ? `${plural(probs, 'problem', 'problems')} found.`
      : s.fatal
        ? 'Structure not read (see the error above).'
        : 'No problems found.')
  );
}

// ------------------------------------------------------------------- map

function layoutMap(reset) {
  const box = $('map-box');
  const width = Math.max(240, box.clientWidth || 600);
  // Small files get bigger cells: as big as fills the map's area.
  const room = Math.floor(Math.sqrt((width * MAX_ROWS * MIN_CELL) / Math.max(1, state.pages)));
  state.cell = Math.min(MAX_CELL, Math.max(MIN_CELL, room));
  state.cols = Math.max(8, Math.floor(width / state.cell));
  state.fit = Math.max(1, Math.ceil(state.pages / (state.cols * MAX_ROWS)));
  if (reset) state.perCell = state.fit;
  state.perCell = Math.min(Math.max(1, state.perCell), state.fit);
  geometry();
}

function geometry() {
  const cells = Math.ceil(state.pages / state.perCell);
  state.totalRows = Math.ceil(cells / state.cols);
  state.rows = Math.min(Math.max(1, state.totalRows), MAX_ROWS);
  state.scrollRow = Math.min(Math.max(0, state.scrollRow), Math.max(0, state.totalRows - state.rows));
  $('zoom-label').textContent = `${plural(state.perCell, 'page', 'pages')} per cell`;
  $('rows-label').textContent =
    state.totalRows > state.rows ? `rows ${state.scrollRow + 1}–${state.scrollRow + state.rows} of ${state.totalRows}` : '';
  $('zoom-in').disabled = state.perCell <= 1;
  $('zoom-out').disabled = state.perCell >= state.fit;
  $('zoom-fit').disabled = state.perCell >= state.fit;
  $('scroll-up').disabled = state.scrollRow <= 0;
  $('scroll-down').disabled = state.scrollRow + state.rows >= state.totalRows;
  const summary = mapSummaryText();
  $('map-summary').textContent = summary;
  $('map').setAttribute('aria-label', `Page map. ${summary}`);
}

async function drawMap(gen = state.gen) {
  const seq = ++drawSeq;
  const first = state.scrollRow * state.cols * state.perCell;
  const count = state.rows * state.cols;
  let cells;
  try {
    cells = state.pages ? await call('map', first, state.perCell, count) : new Uint8Array(0);
  } catch (e) {
    if (gen === state.gen) showError(`Could not draw the map: ${e.message}`);
    return;
  }
  let levels = null;
  if (state.trace && state.pages) {
    try {
      levels = await call('traceLevels', state.trace.index, first, state.perCell, state.unit, count);
    } catch (e) {
      if (gen === state.gen) showError(`Could not draw the trace: ${e.message}`);
    }
  }
  if (seq !== drawSeq || gen !== state.gen) return;
  state.cells = cells;
  if (state.trace) state.trace.levels = levels;
  paint();
}

function paint() {
  const canvas = $('map');
  const dpr = window.devicePixelRatio || 1;
  const w = state.cols * state.cell;
  const h = Math.max(1, state.rows) * state.cell;
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, w, h);
  const cells = state.cells || [];
  const levels = state.trace && state.trace.levels;
  for (let i = 0; i < cells.length; i++) {
    const k = cells[i];
    if (k === NO_KIND) continue;
    const x = (i % state.cols) * state.cell;
    const y = Math.floor(i / state.cols) * state.cell;
    const lv = levels ? levels[i] : 3;
    if (lv === 255) continue; // past the end of the file at that moment
    // As the terminal draws it: solid when cached, fainter as less of the
    // cell is cached, hollow (an outline) when none is.
    ctx.fillStyle = kindColor(k);
    ctx.strokeStyle = kindColor(k);
    if (lv === 0) {
      ctx.lineWidth = 1;
      ctx.strokeRect(x + 1.5, y + 1.5, state.cell - 4, state.cell - 4);
    } else {
      ctx.globalAlpha = lv === 3 ? 1 : lv === 2 ? 0.7 : 0.4;
      ctx.fillRect(x, y, state.cell - 1, state.cell - 1);
      ctx.globalAlpha = 1;
    }
  }
  if (state.selected !== null) {
    const i = Math.floor(state.selected / state.perCell) - state.scrollRow * state.cols;
    if (i >= 0 && i < state.rows * state.cols) {
      ctx.strokeStyle = '#ffffff';
      ctx.lineWidth = 2;
      ctx.strokeRect((i % state.cols) * state.cell + 0.5, Math.floor(i / state.cols) * state.cell + 0.5, state.cell - 2, state.cell - 2);
    }
  }
}

// ---------------------------------------------------------------- traces

function traceText() {
  const t = state.trace;
  if (!t || !t.frame) return '';
  const f = t.frame;
  const secs = (us) => (num(us) / 1e6).toFixed(2);
  const res = f.known
    ? `${fmtInt(f.resident_pages)} of ${fmtInt(f.total_pages)} OS pages resident (${share(num(f.resident_pages), Math.max(1, num(f.total_pages)))})`
    : `residency unknown (the kernel would not tell the recorder)`;
  return (
    `Trace frame ${t.index + 1} of ${t.summary.frames} at ${secs(f.t_us)} s of ${secs(t.summary.duration_us)} s: ${res}. ` +
    `Recorded from ${t.summary.path} while running: ${t.summary.label}.` +
    (t.summary.truncated_tail ? ' (The recording was cut short; its last frame is lost.)' : '')
  );
}

async function showFrame(index) {
  const t = state.trace;
  if (!t) return;
  const gen = state.gen;
  const loads = state.traceLoads;
  const i = Math.max(0, Math.min(index, t.summary.frames - 1));
  const frame = await call('traceFrame', i);
  if (gen !== state.gen || loads !== state.traceLoads || !state.trace) return;
  t.index = i;
  t.frame = frame;
  t.clockUs = num(frame.t_us);
  $('trace-frame').value = String(i);
  $('trace-label').textContent = traceText();
  $('map').setAttribute('aria-label', `Page map. ${mapSummaryText()} ${traceText()}`);
  await drawMap(gen);
  t.drawn = i; // the browser test waits for this
}

function stopPlaying() {
  const t = state.trace;
  if (t && t.timer) clearInterval(t.timer);
  if (t) {
    t.timer = 0;
    t.playing = false;
  }
  $('trace-play').textContent = 'Play';
}

function play() {
  const t = state.trace;
  if (!t) return;
  if (t.playing) {
    stopPlaying();
    return;
  }
  if (t.index >= t.summary.frames - 1) t.clockUs = 0; // at the end: from the start
  t.playing = true;
  $('trace-play').textContent = 'Pause';
  const tickMs = Math.max(30, Math.min(1000, num(t.summary.interval_us) / 1000));
  let busy = false;
  t.timer = setInterval(async () => {
    if (busy || state.trace !== t) return;
    busy = true;
    try {
      t.clockUs += tickMs * 1000 * num($('trace-speed').value);
      const i = await call('traceAt', Math.floor(t.clockUs));
      if (i !== t.index) await showFrame(i);
      if (i >= t.summary.frames - 1) stopPlaying();
    } catch (e) {
      stopPlaying();
      showError(`Could not play the trace: ${e.message}`);
    } finally {
      busy = false;
    }
  }, tickMs);
}

function closeTrace() {
  stopPlaying();
  if (state.trace) call('traceClose').catch(() => {});
  state.trace = null;
  $('trace-controls').hidden = true;
  $('trace-label').textContent = '';
  $('trace').value = '';
}

async function loadTrace(file) {
  hideError();
  closeTrace();
  const gen = state.gen;
  let summary;
  try {
    summary = await call('trace', file);
  } catch (e) {
    state.traceLoads++;
    showError(`Could not read the trace ${file.name}: ${e.message}`);
    return;
  }
  if (gen !== state.gen) return;
  state.traceLoads++;
  summary.frames = num(summary.frames); // a usize: a BigInt from the module
  state.trace = { summary, index: 0, frame: null, levels: null, playing: false, timer: 0, clockUs: 0 };
  const range = $('trace-frame');
  range.max = String(summary.frames - 1);
  range.value = '0';
  $('trace-controls').hidden = false;
  const name = state.summary ? state.summary.name : '';
  if (name && !summary.path.endsWith(name)) {
    $('trace-label').textContent = `Note: the trace was recorded from ${summary.path}, the open file is ${name}.`;
  }
  await showFrame(0);
}

function wireTrace() {
  $('trace').addEventListener('change', () => {
    const f = $('trace').files && $('trace').files[0];
    if (f) loadTrace(f);
  });
  $('trace-play').addEventListener('click', play);
  $('trace-prev').addEventListener('click', () => {
    stopPlaying();
    if (state.trace) showFrame(state.trace.index - 1);
  });
  $('trace-next').addEventListener('click', () => {
    stopPlaying();
    if (state.trace) showFrame(state.trace.index + 1);
  });
  $('trace-frame').addEventListener('input', () => {
    stopPlaying();
    showFrame(num($('trace-frame').value));
  });
  $('trace-close').addEventListener('click', () => {
    closeTrace();
    drawMap();
  });
}

function cellAt(event) {
  const r = $('map').getBoundingClientRect();
  const col = Math.floor((event.clientX - r.left) / state.cell);
  const row = Math.floor((event.clientY - r.top) / state.cell);
  if (col < 0 || row < 0 || col >= state.cols || row >= state.rows) return -1;
  return (state.scrollRow + row) * state.cols + col;
}

function describeRegion(r, fmt) {
  const kind = r.kind;
  const id = r.id.toString();
  let what;
  if (fmt === 'bolt') {
    what = kind === 'overflow' ? `overflow of page ${r.head}` : kind;
    if (r.group) what += ` · bucket ${r.group}`;
    if (r.depth) what += ` · depth ${r.depth}`;
    if (r.items) what += ` · ${plural(r.items, 'item', 'items')}`;
    if (r.fill) what += ` · fill ${r.fill} %`;
  } else if (fmt === 'revlog') {
    what = kind === 'entry' ? `entry of rev ${id}` : kind === 'chunk' ? `data chunk of rev ${id}` : kind;
  } else if (fmt === 'rrd') {
    what = r.group ? `${kind} · ${r.group}` : kind;
    if (kind === 'rows') what += ` · rows ${id}–${num(r.id) + r.items - 1}`;
    if (kind === 'cur_row') what += ` · row ${id} (written last)`;
  } else {
    what = kind;
  }
  return what;
}

function cellText(info) {
  const first = num(info.first_page);
  const n = num(info.pages);
  const where = n === 1 ? `page ${first}` : `pages ${first}–${first + n - 1}`;
  const bytes = `bytes ${fmtInt(info.offset)}–${fmtInt(num(info.offset) + num(info.len) - 1)}`;
  const fmt = state.summary ? state.summary.format : '';
  if (info.kinds.length === 1 && info.region) {
    return `${where} (${bytes}): ${describeRegion(info.region, fmt)}`;
  }
  const total = Math.max(1, num(info.len));
  const mix = info.kinds
    .slice(0, 5)
    .map((k) => `${k.kind} ${((100 * num(k.bytes)) / total).toFixed(0)} %`)
    .join(', ');
  return `${where} (${bytes}): ${mix}`;
}

async function describeCell(cell) {
  const first = cell * state.perCell;
  if (cell < 0 || first >= state.pages) {
    $('hover').textContent = '';
    return;
  }
  const seq = ++hoverSeq;
  const gen = state.gen;
  try {
    const info = await call('cell', first, state.perCell);
    if (seq === hoverSeq && gen === state.gen) $('hover').textContent = cellText(info);
  } catch (e) {
    if (seq === hoverSeq) $('hover').textContent = e.message;
  }
}

function ensureVisible(page) {
  const row = Math.floor(Math.floor(page / state.perCell) / state.cols);
  if (row < state.scrollRow) state.scrollRow = row;
  else if (row >= state.scrollRow + state.rows) state.scrollRow = row - state.rows + 1;
}

async function select(page, { decodeIt = true, describe = true } = {}) {
  if (!state.open || state.pages === 0) return;
  page = Math.min(Math.max(0, page), state.pages - 1);
  const cell = Math.floor(page / state.perCell);
  state.selected = cell * state.perCell;
  const before = state.scrollRow;
  ensureVisible(state.selected);
  geometry();
  if (before !== state.scrollRow) await drawMap();
  else paint();
  if (describe) describeCell(cell);
  if (decodeIt) decode(state.selected);
}

async function zoom(perCell) {
  const anchor = state.selected ?? state.scrollRow * state.cols * state.perCell;
  state.perCell = Math.min(Math.max(1, perCell), state.fit);
  const row = Math.floor(Math.floor(anchor / state.perCell) / state.cols);
  state.scrollRow = row - Math.floor(Math.min(MAX_ROWS, state.totalRows) / 2);
  geometry();
  ensureVisible(anchor);
  geometry();
  await drawMap();
}

async function scrollBy(rows) {
  const before = state.scrollRow;
  state.scrollRow += rows;
  geometry();
  if (state.scrollRow !== before) await drawMap();
}

function wireMap() {
  const canvas = $('map');
  canvas.addEventListener('mousemove', (e) => {
    const c = cellAt(e);
    if (c === state.hoverCell) return;
    state.hoverCell = c;
    describeCell(c);
  });
  canvas.addEventListener('mouseleave', () => {
    state.hoverCell = -1;
  });
  canvas.addEventListener('click', (e) => {
    const c = cellAt(e);
    if (c >= 0) select(c * state.perCell);
  });
  canvas.addEventListener(
    'wheel',
    (e) => {
      if (state.totalRows <= state.rows) return;
      e.preventDefault();
      scrollBy(Math.sign(e.deltaY) * 3);
    },
    { passive: false },
  );
  canvas.addEventListener('keydown', (e) => {
    const sel = state.selected ?? state.scrollRow * state.cols * state.perCell;
    const step = state.perCell;
    switch (e.key) {
      case 'ArrowRight':
        select(sel + step, { decodeIt: false });
        break;
      case 'ArrowLeft':
        select(sel - step, { decodeIt: false });
        break;
      case 'ArrowDown':
        select(sel + step * state.cols, { decodeIt: false });
        break;
      case 'ArrowUp':
        select(sel - step * state.cols, { decodeIt: false });
        break;
      case 'Home':
        select(0, { decodeIt: false });
        break;
      case 'End':
        select(state.pages - 1, { decodeIt: false });
        break;
      case 'Enter':
      case ' ':
        select(sel);
        break;
      case '+':
      case '=':
        zoom(Math.floor(state.perCell / 2));
        break;
      case '-':
        zoom(state.perCell * 2);
        break;
      case 'PageDown':
        scrollBy(state.rows);
        break;
      case 'PageUp':
        scrollBy(-state.rows);
        break;
      default:
        return;
    }
    e.preventDefault();
  });
  $('zoom-in').addEventListener('click', () => zoom(Math.floor(state.perCell / 2)));
  $('zoom-out').addEventListener('click', () => zoom(state.perCell * 2));
  $('zoom-fit').addEventListener('click', () => zoom(state.fit));
  $('scroll-up').addEventListener('click', () => scrollBy(-state.rows));
  $('scroll-down').addEventListener('click', () => scrollBy(state.rows));
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!state.open) return;
      layoutMap(false);
      drawMap();
    }, 150);
  });
}

// --------------------------------------------------------------- detail

function pageLink(page, label = `page ${page}`) {
  return el('button', { type: 'button', class: 'link', text: label, onclick: () => select(num(page)) });
}

// Described structures: each title, then its fields.
function itemsOut(items) {
  return items.flatMap((item) => [
    el('p', { class: 'k', text: item.title }),
    el('dl', { class: 'fields' }, item.fields.flatMap(([k, val]) => [el('dt', { text: k }), el('dd', { text: val })])),
  ]);
}

function shownText(s) {
  return s ? s.text : '';
}

async function decode(page) {
  const seq = ++detailSeq;
  const gen = state.gen;
  const box = $('detail');
  let v;
  try {
    v = await call('page', page);
  } catch (e) {
    if (seq === detailSeq) box.replaceChildren(el('p', { class: 'bad', text: e.message }));
    return;
  }
  if (seq !== detailSeq || gen !== state.gen) return;
  const out = [];
  const offset = num(v.offset);
  const len = num(v.len);
  if (v.bolt) {
    const b = v.bolt;
    out.push(el('h3', { text: `page ${b.pgid} · ${b.page_type}` }));
    if (v.head !== null && v.head !== undefined) {
      out.push(el('p', { class: 'dim', text: `Map page ${page} is an overflow page of the run that page ${v.head} heads; that page is shown.` }));
    }
    out.push(
      el(
        'dl',
        { class: 'fields' },
        el('dt', { text: 'header id' }),
        el('dd', { text: b.header_id.toString() }),
        el('dt', { text: 'flags' }),
        el('dd', { text: `0x${b.flags.toString(16).padStart(2, '0')}` }),
        el('dt', { text: 'count' }),
        el('dd', { text: String(b.count) }),
        el('dt', { text: 'overflow' }),
        el('dd', { text: String(b.overflow) }),
        el('dt', { text: 'offset' }),
        el('dd', { text: `${fmtInt(offset)} (0x${offset.toString(16)}), ${human(len)}` }),
      ),
    );
    if (b.meta.length) {
      out.push(el('dl', { class: 'fields' }, b.meta.flatMap(([k, val]) => [el('dt', { text: k }), el('dd', { class: val.includes('INVALID') ? 'bad' : '', text: val })])));
    }
    if (v.items.length) {
      out.push(...itemsOut(v.items));
    } else if (b.elements.length) {
      out.push(el('p', { class: 'dim', text: b.elements.length < b.count ? `elements (first ${b.elements.length} of ${b.count}):` : `elements (${b.elements.length}):` }));
      const rows = b.elements.map((e) => {
        let what;
        if (e.kind === 'branch') what = el('td', {}, '→ ', pageLink(e.page));
        else if (e.kind === 'bucket')
          what = el('td', { class: e.error ? 'bad' : '' }, e.error || (num(e.page) === 0 ? `[inline bucket, seq ${e.sequence}]` : ['[bucket, root ', pageLink(e.page), `, seq ${e.sequence}]`]));
        else if (e.kind === 'bad') what = el('td', { class: 'bad', text: `✗ ${e.error}` });
        else what = el('td', { class: 'v', text: `${shownText(e.value)}${e.value.complete ? '' : ` (${fmtInt(e.value.len)} B)`}` });
        return el('tr', {}, el('td', { class: 'num dim', text: String(e.index) }), el('td', { class: 'k mono', text: shownText(e.key) }), what);
      });
      out.push(table(['#', 'key', 'value / child'], rows));
    }
    if (b.free_total !== null && b.free_total !== undefined) {
      out.push(el('p', { class: 'dim', text: b.free_ids.length < num(b.free_total) ? `free ids (first ${b.free_ids.length} of ${b.free_total}):` : `free ids (${b.free_total}):` }));
      out.push(el('p', { class: 'mono', text: b.free_ids.map(String).join(' ') }));
    }
  } else {
    out.push(el('h3', { text: `map page ${page} · bytes ${fmtInt(offset)}–${fmtInt(offset + len - 1)}` }));
    out.push(...itemsOut(v.items));
    if (!v.items.length && !v.error) out.push(el('p', { class: 'dim', text: `${v.kind} bytes` }));
  }
  if (v.error) out.push(el('p', { class: 'bad', text: v.error }));
  const hexBox = el('div');
  out.push(el('h3', { text: 'bytes' }), hexBox);
  box.replaceChildren(...out);
  showHex(hexBox, offset, len, 0, seq);
}

async function showHex(box, offset, len, at, seq) {
  let lines;
  try {
    lines = await call('hex', offset + at, Math.min(HEX_BYTES, Math.max(0, len - at)));
  } catch (e) {
    if (seq === detailSeq) box.replaceChildren(el('p', { class: 'bad', text: e.message }));
    return;
  }
  if (seq !== detailSeq) return;
  const text = lines
    .map((l) => `${num(l.offset).toString(16).padStart(8, '0')}  ${l.hex.padEnd(49)} |${l.ascii}|`)
    .join('\n');
  const parts = [];
  if (len > HEX_BYTES) {
    parts.push(
      el(
        'div',
        { class: 'pager' },
        el('button', { type: 'button', text: '◂ earlier', disabled: at === 0, onclick: () => showHex(box, offset, len, Math.max(0, at - HEX_BYTES), seq) }),
        el('button', { type: 'button', text: 'later ▸', disabled: at + HEX_BYTES >= len, onclick: () => showHex(box, offset, len, at + HEX_BYTES, seq) }),
        el('span', { class: 'range', text: `bytes ${fmtInt(at)}–${fmtInt(Math.min(len, at + HEX_BYTES) - 1)} of ${fmtInt(len)}` }),
      ),
    );
  }
  parts.push(el('pre', { class: 'hex', text }));
  box.replaceChildren(...parts);
}

// ------------------------------------------------------------ structure

async function renderStructure(gen) {
  const s = state.summary;
  const box = $('structure');
  if (s.facts.bolt) return renderBuckets(box, gen);
  if (s.facts.revlog) return renderEntries(box, gen, num(s.facts.revlog.revisions) - 1);
  if (s.facts.rrd) return renderRrd(box, gen);
  box.replaceChildren(el('p', { class: 'dim', text: 'No structure to show for this file.' }));
  return undefined;
}

// bbolt: buckets, sub-buckets and keys.

async function renderBuckets(box, gen) {
  const b = state.summary.facts.bolt;
  const ul = el('ul', { class: 'buckets', id: 'bucket-tree' });
  box.replaceChildren(el('p', { class: 'dim', text: `${plural(b.buckets, 'bucket', 'buckets')}, ${plural(b.keys, 'key', 'keys')} in all.` }), ul);
  await loadChildren(ul, undefined, 0, gen);
}

async function loadChildren(ul, parent, start, gen) {
  const page = await call('children', parent, start, BUCKETS_PER_SCREEN);
  if (gen !== state.gen) return;
  for (const g of page.items) ul.append(bucketItem(g, gen));
  const shown = start + page.items.length;
  if (shown < num(page.total)) {
    const more = el('li', {});
    more.append(
      el('button', {
        type: 'button',
        text: `show ${Math.min(BUCKETS_PER_SCREEN, num(page.total) - shown)} more of ${fmtInt(page.total)} buckets`,
        onclick: () => {
          more.remove();
          loadChildren(ul, parent, shown, gen);
        },
      }),
    );
    ul.append(more);
  }
  if (num(page.total) === 0 && parent === undefined) ul.append(el('li', { class: 'dim', text: 'no buckets' }));
}

function bucketItem(g, gen) {
  const li = el('li', { 'data-path': g.path, 'data-group': String(g.index) });
  const hasSubs = num(g.buckets) > 0;
  const sub = el('ul', { class: 'buckets', hidden: true });
  const keysBox = el('div', { class: 'keys-box', hidden: true });
  const expand = el('button', {
    type: 'button',
    class: hasSubs ? 'expand' : 'expand leafless',
    text: '▸',
    'aria-expanded': 'false',
    'aria-label': `Show the sub-buckets of ${g.name}`,
    tabindex: hasSubs ? undefined : '-1',
    'aria-hidden': hasSubs ? undefined : 'true',
  });
  let loaded = false;
  expand.addEventListener('click', async () => {
    const open = expand.getAttribute('aria-expanded') !== 'true';
    expand.setAttribute('aria-expanded', String(open));
    expand.textContent = open ? '▾' : '▸';
    sub.hidden = !open;
    if (open && !loaded) {
      loaded = true;
      await loadChildren(sub, g.index, 0, gen);
    }
  });
  const entries = num(g.keys) + num(g.buckets);
  const keysBtn = el('button', { type: 'button', class: 'keys-btn', text: 'keys', 'aria-expanded': 'false', disabled: entries === 0, 'aria-label': `List the keys of ${g.name}` });
  keysBtn.addEventListener('click', () => {
    const open = keysBtn.getAttribute('aria-expanded') !== 'true';
    keysBtn.setAttribute('aria-expanded', String(open));
    keysBox.hidden = !open;
    if (open && !keysBox.dataset.loaded) {
      keysBox.dataset.loaded = '1';
      showKeys(keysBox, g, undefined, 0, [], gen);
    }
  });
  const inline = num(g.root) === 0;
  const where = inline
    ? el('span', { class: 'meta' }, 'inline in ', g.host !== null && g.host !== undefined ? pageLink(g.host) : 'a leaf')
    : el('span', { class: 'meta' }, 'root ', pageLink(g.root), `, height ${g.height}, ${plural(g.pages, 'page', 'pages')}`);
  li.append(
    el(
      'div',
      { class: 'bucket-row' },
      expand,
      el('span', { class: 'name', title: `hex ${g.key_hex}`, text: g.name }),
      el('span', { class: 'keys', text: plural(g.keys, 'key', 'keys') }),
      hasSubs ? el('span', { class: 'subs', text: plural(g.buckets, 'sub-bucket', 'sub-buckets') }) : null,
      el('span', { class: 'seq meta', text: `seq ${g.sequence}` }),
      where,
      keysBtn,
    ),
    keysBox,
    sub,
  );
  return li;
}

async function showKeys(box, g, from, index, back, gen) {
  let kp;
  try {
    kp = await call('keys', g.index, from, KEYS_PER_SCREEN);
  } catch (e) {
    if (gen === state.gen) box.replaceChildren(el('p', { class: 'bad', text: e.message }));
    return;
  }
  if (gen !== state.gen) return;
  const total = num(g.keys) + num(g.buckets);
  const rows = kp.items.map((k, i) =>
    el(
      'tr',
      {},
      el('td', { class: 'num dim', text: String(index + i + 1) }),
      el('td', { class: 'k mono', text: k.key.text, title: k.key.text }),
      el('td', { class: 'mono key-hex', text: k.key.hex + (k.key.complete ? '' : '…'), title: k.key.hex }),
      el('td', { class: 'v mono', text: k.bucket ? '(bucket)' : k.value.text, title: k.bucket ? undefined : k.value.text }),
      el('td', { class: 'mono value-hex', text: k.bucket ? '' : k.value.hex + (k.value.complete ? '' : '…'), title: k.bucket ? undefined : k.value.hex }),
      el('td', { class: 'num', text: k.bucket ? '' : fmtInt(k.value.len) }),
    ),
  );
  const last = index + kp.items.length;
  const pager = el(
    'div',
    { class: 'pager' },
    el('button', {
      type: 'button',
      class: 'prev',
      text: '◂ previous',
      disabled: back.length === 0,
      onclick: () => {
        const prev = back[back.length - 1];
        showKeys(box, g, prev.from, prev.index, back.slice(0, -1), gen);
      },
    }),
    el('button', {
      type: 'button',
      class: 'next',
      text: 'next ▸',
      disabled: !kp.next,
      onclick: () => showKeys(box, g, kp.next, last, [...back, { from, index }], gen),
    }),
    el('span', { class: 'range', text: kp.items.length ? `entries ${fmtInt(index + 1)}–${fmtInt(last)} of ${fmtInt(total)}` : 'no entries' }),
  );
  box.replaceChildren(pager, table(['#', 'key', 'key (hex)', 'value', 'value (hex)', 'bytes'], rows));
}

// revlog: entries, newest first.

async function renderEntries(box, gen, from) {
  const total = num(state.summary.facts.revlog.revisions);
  if (total === 0) {
    box.replaceChildren(el('p', { class: 'dim', text: 'No revisions.' }));
    return;
  }
  const page = await call('entries', from, ENTRIES_PER_SCREEN, true);
  if (gen !== state.gen) return;
  const rows = page.items.map((e) =>
    el(
      'tr',
      { class: 'clickable', tabindex: '0', 'data-rev': String(e.rev), onclick: () => select(Math.floor(num(e.position) / state.unit)), onkeydown: (ev) => ev.key === 'Enter' && select(Math.floor(num(e.position) / state.unit)) },
      el('td', { class: 'num rev', text: String(e.rev) }),
      el('td', { class: 'num', text: String(e.linkrev) }),
      el('td', { class: 'num', text: String(e.p1) }),
      el('td', { class: 'num', text: String(e.p2) }),
      el('td', { class: 'mono node', text: e.node }),
      el('td', { class: 'num', text: fmtInt(e.data_offset) }),
      el('td', { class: 'num', text: fmtInt(e.compressed) }),
      el('td', { class: 'num', text: fmtInt(e.uncompressed) }),
      el('td', { class: 'num', text: String(e.base) }),
      el('td', { class: 'num', text: `0x${e.flags.toString(16).padStart(4, '0')}` }),
    ),
  );
  const lastRev = page.items.length ? page.items[page.items.length - 1].rev : from;
  const pager = el(
    'div',
    { class: 'pager' },
    el('button', { type: 'button', text: '◂ newer', disabled: from >= total - 1, onclick: () => renderEntries(box, gen, Math.min(total - 1, from + ENTRIES_PER_SCREEN)) }),
    el('button', { type: 'button', text: 'older ▸', disabled: lastRev <= 0, onclick: () => renderEntries(box, gen, lastRev - 1) }),
    el('span', { class: 'range', text: `revisions ${from}–${lastRev} of ${fmtInt(total)}, newest first` }),
  );
  const parts = [pager, table(['rev', 'linkrev', 'p1', 'p2', 'nodeid', 'offset', 'size', 'full', 'base', 'flags'], rows)];
  if (page.error) parts.push(el('p', { class: 'bad', text: page.error }));
  box.replaceChildren(...parts);
}

// RRD: data sources, archives and their rows.

function renderRrd(box, gen) {
  const r = state.summary.facts.rrd;
  const ds = table(
    ['data source', 'type', 'heartbeat', 'min', 'max', 'last value'],
    r.ds.map((d) =>
      el('tr', {}, el('td', { class: 'k', text: d.name }), el('td', { text: d.kind }), el('td', { class: 'num', text: `${d.heartbeat} s` }), el('td', { class: 'mono', text: d.min }), el('td', { class: 'mono', text: d.max }), el('td', { class: 'mono', text: d.last_ds })),
    ),
  );
  const rraRows = [];
  for (const a of r.rras) {
    const rowsBox = el('div', { class: 'keys-box rra-rows', hidden: true, 'data-rra': String(a.index) });
    const btn = el('button', { type: 'button', class: 'rows-btn', text: 'rows', 'aria-expanded': 'false', 'aria-label': `Show the rows of archive ${a.index}` });
    btn.addEventListener('click', () => {
      const open = btn.getAttribute('aria-expanded') !== 'true';
      btn.setAttribute('aria-expanded', String(open));
      rowsBox.hidden = !open;
      if (open && !rowsBox.dataset.loaded) {
        rowsBox.dataset.loaded = '1';
        showRows(rowsBox, a, 0, gen);
      }
    });
    rraRows.push(
      el(
        'tr',
        { 'data-rra': String(a.index) },
        el('td', { class: 'num', text: String(a.index) }),
        el('td', { class: 'cf', text: a.cf }),
        el('td', { class: 'num pdp', text: String(a.pdp_per_row) }),
        el('td', { class: 'num', text: `${a.seconds_per_row} s` }),
        el('td', { class: 'num rows', text: fmtInt(a.rows) }),
        el('td', { class: 'num cur-row', text: String(a.cur_row) }),
        el('td', { class: 'mono', text: a.xff ?? '' }),
        el('td', {}, btn),
      ),
      el('tr', {}, el('td', { colspan: '8' }, rowsBox)),
    );
  }
  box.replaceChildren(
    el('h3', { text: 'Data sources' }),
    ds,
    el('h3', { text: 'Archives (RRAs)' }),
    table(['#', 'CF', 'PDPs/row', 'row span', 'rows', 'cur_row', 'xff', ''], rraRows, 'grid rra-table'),
  );
}

async function showRows(box, a, from, gen) {
  let page;
  try {
    page = await call('rraRows', a.index, from, ROWS_PER_SCREEN);
  } catch (e) {
    if (gen === state.gen) box.replaceChildren(el('p', { class: 'bad', text: e.message }));
    return;
  }
  if (gen !== state.gen) return;
  const names = state.summary.facts.rrd.ds.map((d) => d.name);
  const total = num(page.total);
  const rows = page.items.map((row) =>
    el(
      'tr',
      {},
      el('td', { class: 'num', text: String(row.row) }),
      el('td', { class: 'num time', text: row.time.toString() }),
      el('td', { class: 'dim', text: isoTime(row.time) }),
      row.values.map((v) => el('td', { class: 'mono value', text: v })),
    ),
  );
  const last = from + page.items.length;
  const pager = el(
    'div',
    { class: 'pager' },
    el('button', { type: 'button', text: '◂ newer', disabled: from === 0, onclick: () => showRows(box, a, Math.max(0, from - ROWS_PER_SCREEN), gen) }),
    el('button', { type: 'button', text: 'older ▸', disabled: last >= total, onclick: () => showRows(box, a, last, gen) }),
    el('span', { class: 'range', text: `rows ${from + 1}–${last} of ${fmtInt(total)}, newest first` }),
  );
  box.replaceChildren(pager, table(['row', 'time', 'UTC', ...names], rows));
}

// ------------------------------------------------------------------ start

function wireFiles() {
  const input = $('file');
  input.addEventListener('change', () => {
    const f = input.files && input.files[0];
    if (f) openFile(f);
  });
  let depth = 0;
  document.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth++;
    document.body.classList.add('dragging');
  });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) document.body.classList.remove('dragging');
  });
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove('dragging');
    const f = e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files[0];
    if (f) openFile(f);
  });
}

async function main() {
  startWorker();
  wireFiles();
  wireMap();
  wireTrace();
  try {
    const hello = await call('hello');
    kinds = hello.kinds;
    moduleVersion = hello.version;
    document.body.dataset.ready = '1';
    setStatus(`Ready: pick or drop a file · mapwise-wasm ${moduleVersion}`);
  } catch (e) {
    showError(`Could not load the WebAssembly module: ${e.message}`);
  }
}

main();
