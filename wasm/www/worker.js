// The viewer's Web Worker: it runs the WebAssembly module, because the
// module reads the file with FileReaderSync (synchronous byte ranges of the
// File, never the whole file), which only exists in workers. The page
// (app.js) sends { id, op, args } and gets back { id, ok, value | error,
// memory }, where memory is the module's linear memory in bytes.

import init, { Viewer, Trace, kinds, version } from './pkg/mapwise_wasm.js';

let wasm = null;
let viewer = null;
let trace = null;
// Traces are small (one list of resident runs per frame); a bigger file
// is not a trace worth reading whole.
const MAX_TRACE = 256 << 20;

const ready = init().then((exports) => {
  wasm = exports;
  return { kinds: kinds(), version: version() };
});

const memory = () => (wasm ? wasm.memory.buffer.byteLength : 0);

function needTrace() {
  if (!trace) throw new Error('no trace is loaded');
  return trace;
}

function need() {
  if (!viewer) throw new Error('no file is open');
  return viewer;
}

const ops = {
  hello: () => ready,
  open(file) {
    if (viewer) {
      viewer.free();
      viewer = null;
    }
    const t0 = performance.now();
    viewer = Viewer.open(file, file.name);
    const summary = viewer.summary();
    summary.open_ms = performance.now() - t0;
    summary.reads = viewer.reads();
    return summary;
  },
  close() {
    if (viewer) {
      viewer.free();
      viewer = null;
    }
    return null;
  },
  map: (first, perCell, cells) => need().map(first, perCell, cells),
  cell: (first, pages) => need().cell(first, pages),
  children: (parent, start, count) => need().children(parent, start, count),
  keys: (group, from, count) => need().keys(group, from, count),
  page: (page) => need().page(page),
  hex: (offset, len) => need().hex(offset, len),
  entries: (from, count, newestFirst) => need().entries(from, count, newestFirst),
  rraRows: (rra, from, count) => need().rraRows(rra, from, count),
  reads: () => need().reads(),
  trace(file) {
    if (trace) {
      trace.free();
      trace = null;
    }
    if (file.size > MAX_TRACE) throw new Error(`${file.name} is ${file.size} bytes: too big for a residency trace`);
    const bytes = new Uint8Array(new FileReaderSync().readAsArrayBuffer(file));
    trace = Trace.parse(bytes);
    return trace.summary();
  },
  traceClose() {
    if (trace) {
      trace.free();
      trace = null;
    }
    return null;
  },
  traceFrame: (index) => needTrace().frame(index),
  traceAt: (tUs) => needTrace().frameAt(tUs),
  traceLevels: (index, first, perCell, unit, cells) => needTrace().levels(index, first, perCell, unit, cells),
};

self.onmessage = async (event) => {
  const { id, op, args } = event.data;
  try {
    await ready;
    const fn = ops[op];
    if (!fn) throw new Error(`unknown operation ${op}`);
    const value = await fn(...(args || []));
    const transfer = value instanceof Uint8Array ? [value.buffer] : [];
    self.postMessage({ id, ok: true, value, memory: memory() }, transfer);
  } catch (e) {
    // A trap (a Rust panic) leaves the module unusable: the page then
    // starts a fresh worker.
    const broken = e instanceof WebAssembly.RuntimeError || !wasm;
    const error = e && e.message ? e.message : String(e);
    self.postMessage({ id, ok: false, error, broken, memory: memory() });
  }
};
