// Drives the viewer in Debian's Chromium with playwright-core and prints
// what the page shows as one JSON object on stdout; the Rust test
// (browser.rs) compares it with the peers' outputs. Nothing is asserted
// here: this script only clicks, waits and reads.
//
//   node browser.mjs CONFIG.json
//
// CONFIG: { url, npm, profile, screens, chromium, files: { small, etcd,
//           trace, revlog, rrd, corrupt, big }, keysOf, etcdKeysOf, timeoutMs }

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const require = createRequire(path.join(cfg.npm, 'package.json'));
const { chromium } = require('playwright-core');

const report = { console: [], pageErrors: [], steps: [] };
const log = (msg) => process.stderr.write(`browser.mjs: ${msg}\n`);
const T = cfg.timeoutMs || 120000;

fs.rmSync(cfg.profile, { recursive: true, force: true });
fs.mkdirSync(cfg.profile, { recursive: true });
fs.mkdirSync(cfg.screens, { recursive: true });

const context = await chromium.launchPersistentContext(cfg.profile, {
  executablePath: cfg.chromium,
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ],
});

try {
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') report.console.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => report.pageErrors.push(String(e && e.stack ? e.stack : e)));

  const step = (name) => {
    log(name);
    report.steps.push(name);
  };

  step('load');
  await page.goto(cfg.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: T });

  async function open(file) {
    const n = await page.evaluate(() => window.mapwise.state.opens);
    await page.setInputFiles('#file', file);
    await page.waitForFunction((n) => window.mapwise.state.opens > n, n, { timeout: T });
    const last = await page.evaluate(() => window.mapwise.state.lastOpen);
    return last;
  }

  const facts = () =>
    page.$$eval('#facts > div', (ds) => Object.fromEntries(ds.map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent])));
  const errorText = () => page.$eval('#error', (e) => (e.hidden ? null : e.textContent));
  const visible = (sel) => page.locator(sel).isVisible();

  // Expand every bucket that has sub-buckets, level by level.
  async function expandAll() {
    for (let round = 0; round < 50; round++) {
      const closed = page.locator('#bucket-tree button.expand[aria-expanded="false"]:not(.leafless)');
      const n = await closed.count();
      if (n === 0) return round;
      const btn = closed.first();
      const li = btn.locator('xpath=ancestor::li[1]');
      const group = await li.getAttribute('data-path');
      await btn.click();
      await page.waitForFunction(
        (p) => {
          const li = [...document.querySelectorAll('#bucket-tree li[data-path]')].find((l) => l.dataset.path === p);
          return li && li.querySelector(':scope > ul.buckets > li');
        },
        group,
        { timeout: T },
      );
    }
    return 50;
  }

  const buckets = () =>
    page.$$eval('#bucket-tree li[data-path]', (lis) =>
      lis.map((li) => {
        const row = li.querySelector(':scope > .bucket-row');
        const t = (sel) => (row.querySelector(sel) || { textContent: '' }).textContent;
        return { path: li.dataset.path, name: t('.name'), keys: t('.keys'), subs: t('.subs'), seq: t('.seq') };
      }),
    );

  async function keyScreens(bucketPath, screens) {
    const li = page.locator(`#bucket-tree li[data-path="${bucketPath}"]`);
    await li.locator(':scope > .bucket-row .keys-btn').click();
    const box = li.locator(':scope > .keys-box');
    await box.locator('table').waitFor({ timeout: T });
    const out = [];
    for (let i = 0; i < screens; i++) {
      const range = await box.locator('.range').textContent();
      const rows = await box.locator('tbody tr').evaluateAll((trs) =>
        trs.map((tr) => ({
          key: tr.cells[1].textContent,
          keyHex: tr.cells[2].textContent,
          value: tr.cells[3].textContent,
          valueHex: tr.cells[4].textContent,
          bytes: tr.cells[5].textContent,
        })),
      );
      out.push({ range, rows });
      const next = box.locator('.next');
      if (i + 1 === screens || (await next.isDisabled())) break;
      await next.click();
      await page.waitForFunction(
        ([p, before]) => {
          const li = [...document.querySelectorAll('#bucket-tree li[data-path]')].find((l) => l.dataset.path === p);
          const r = li && li.querySelector(':scope > .keys-box .range');
          return r && r.textContent !== before;
        },
        [bucketPath, range],
        { timeout: T },
      );
    }
    return out;
  }

  async function cellCenter(cellIndex) {
    const box = await page.locator('#map').boundingBox();
    const { cell, cols } = await page.evaluate(() => ({ cell: window.mapwise.state.cell, cols: window.mapwise.state.cols }));
    return { x: box.x + (cellIndex % cols) * cell + cell / 2, y: box.y + Math.floor(cellIndex / cols) * cell + cell / 2 };
  }

  async function detailHeading(before) {
    await page.waitForFunction((b) => {
      const h = document.querySelector('#detail h3');
      return h && h.textContent !== b && document.querySelector('#detail pre.hex');
    }, before, { timeout: T });
    return page.$eval('#detail h3', (h) => h.textContent);
  }

  const legend = () =>
    page.$$eval('#legend tbody tr', (trs) => trs.map((tr) => ({ kind: tr.dataset.kind, count: tr.cells[1].textContent, bytes: tr.cells[2].textContent, share: tr.cells[3].textContent })));

  // ---- bbolt: small.db
  step('small.db');
  const small = { open: await open(cfg.files.small) };
  small.facts = await facts();
  small.error = await errorText();
  await page.waitForSelector('#bucket-tree li[data-path]', { timeout: T });
  small.expandRounds = await expandAll();
  small.buckets = await buckets();
  small.keys = await keyScreens(cfg.keysOf, 2);
  small.mapSummary = await page.textContent('#map-summary');
  small.mapLabel = await page.getAttribute('#map', 'aria-label');
  small.legend = await legend();
  // Hover page 0, click it, then page 1 with the keyboard.
  const c0 = await cellCenter(0);
  await page.mouse.move(c0.x, c0.y);
  await page.waitForFunction(() => document.querySelector('#hover').textContent.length > 0, null, { timeout: T });
  small.hover0 = await page.textContent('#hover');
  await page.mouse.click(c0.x, c0.y);
  small.detail0 = await detailHeading('');
  small.detail0Text = await page.textContent('#detail');
  await page.focus('#map');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  small.detail1 = await detailHeading(small.detail0);
  small.hover1 = await page.textContent('#hover');
  await page.screenshot({ path: path.join(cfg.screens, 'bolt-small.png'), fullPage: true });

  // ---- bbolt: a real etcd file
  step('etcd-small.db');
  const etcd = { open: await open(cfg.files.etcd) };
  etcd.facts = await facts();
  await page.waitForSelector('#bucket-tree li[data-path]', { timeout: T });
  etcd.buckets = await buckets();
  etcd.keys = await keyScreens(cfg.etcdKeysOf, 1);

  // ---- a residency trace over the etcd file: frames by keyboard and
  // button, then playback to the end
  step('trace over etcd-small.db');
  const drawnFrame = (i) =>
    page.waitForFunction((i) => window.mapwise.state.trace && window.mapwise.state.trace.drawn === i, i, { timeout: T });
  const frameShown = () =>
    page.evaluate(() => {
      const s = window.mapwise.state;
      const counts = { 0: 0, 1: 0, 2: 0, 3: 0, 255: 0 };
      s.trace.levels.forEach((l, i) => {
        if (s.cells[i] !== 255) counts[l]++;
      });
      return { index: s.trace.index, counts, label: document.querySelector('#trace-label').textContent };
    });
  const trace = { frames: [] };
  await page.setInputFiles('#trace', cfg.files.trace);
  await drawnFrame(0);
  trace.frames.push(await frameShown());
  await page.focus('#trace-next');
  await page.keyboard.press('Enter');
  await drawnFrame(1);
  trace.frames.push(await frameShown());
  await page.screenshot({ path: path.join(cfg.screens, 'trace.png'), fullPage: true });
  await page.keyboard.press('Enter');
  await drawnFrame(2);
  trace.frames.push(await frameShown());
  await page.click('#trace-prev');
  await drawnFrame(1);
  await page.click('#trace-prev');
  await drawnFrame(0);
  await page.click('#trace-play');
  await page.waitForFunction(() => window.mapwise.state.trace.drawn === 2 && !window.mapwise.state.trace.playing, null, { timeout: T });
  trace.afterPlay = await frameShown();
  // A file that is not a trace: a clear error, the map stays usable.
  await page.setInputFiles('#trace', cfg.files.small);
  await page.waitForFunction(() => !document.querySelector('#error').hidden, null, { timeout: T });
  trace.badError = await errorText();
  trace.badViewsVisible = await visible('#views');
  trace.badTrace = await page.evaluate(() => window.mapwise.state.trace);

  // ---- revlog
  step('00changelog.i');
  const revlog = { open: await open(cfg.files.revlog) };
  revlog.facts = await facts();
  await page.waitForSelector('#structure tr[data-rev]', { timeout: T });
  revlog.entries = await page.$$eval('#structure tr[data-rev]', (trs) => trs.map((tr) => ({ rev: tr.querySelector('.rev').textContent, node: tr.querySelector('.node').textContent })));
  revlog.range = await page.textContent('#structure .range');
  // Clicking an entry decodes the map page holding it.
  await page.click('#structure tr[data-rev]');
  revlog.detail = await detailHeading('');
  revlog.detailText = await page.textContent('#detail');
  await page.screenshot({ path: path.join(cfg.screens, 'revlog.png'), fullPage: true });

  // ---- rrd
  step('gauge.rrd');
  const rrd = { open: await open(cfg.files.rrd) };
  rrd.facts = await facts();
  await page.waitForSelector('#structure tr[data-rra]', { timeout: T });
  rrd.rras = await page.$$eval('#structure .rra-table tbody > tr[data-rra]', (trs) =>
    trs.map((tr) => ({ index: tr.dataset.rra, cf: tr.querySelector('.cf').textContent, pdp: tr.querySelector('.pdp').textContent, rows: tr.querySelector('.rows').textContent, curRow: tr.querySelector('.cur-row').textContent })),
  );
  rrd.newest = [];
  for (const r of rrd.rras) {
    await page.click(`#structure tr[data-rra="${r.index}"] .rows-btn`);
    const sel = `#structure div.rra-rows[data-rra="${r.index}"] tbody tr`;
    await page.waitForSelector(sel, { timeout: T });
    rrd.newest.push(
      await page.$eval(sel, (tr) => ({ time: tr.querySelector('.time').textContent, values: [...tr.querySelectorAll('.value')].map((v) => v.textContent) })),
    );
  }
  await page.screenshot({ path: path.join(cfg.screens, 'rrd.png'), fullPage: true });

  // ---- bytes no parser recognises: an error panel, the page stays usable
  step('junk.bin');
  const junk = { open: await open(cfg.files.junk) };
  junk.error = await errorText();
  junk.viewsVisible = await visible('#views');
  junk.mapSummary = await page.textContent('#map-summary');
  junk.status = await page.textContent('#status');

  // ---- a corrupt file, then a good one
  step('corrupt.db');
  const corrupt = { open: await open(cfg.files.corrupt) };
  corrupt.error = await errorText();
  corrupt.viewsVisible = await visible('#views');
  await page.screenshot({ path: path.join(cfg.screens, 'corrupt.png'), fullPage: true });
  step('small.db after the corrupt file');
  const after = { open: await open(cfg.files.small) };
  after.error = await errorText();
  after.facts = await facts();
  after.viewsVisible = await visible('#views');
  await page.waitForSelector('#bucket-tree li[data-path]', { timeout: T });
  after.buckets = await buckets();

  // ---- drag and drop (a File made in the page from small.db's bytes)
  step('drop small.db');
  const bytes = [...fs.readFileSync(cfg.files.small)];
  const n = await page.evaluate(() => window.mapwise.state.opens);
  const dt = await page.evaluateHandle((b) => {
    const t = new DataTransfer();
    t.items.add(new File([new Uint8Array(b)], 'dropped.db'));
    return t;
  }, bytes);
  await page.dispatchEvent('body', 'dragenter', { dataTransfer: dt });
  await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
  await page.waitForFunction((n) => window.mapwise.state.opens > n, n, { timeout: T });
  const dropped = { open: await page.evaluate(() => window.mapwise.state.lastOpen), facts: await facts() };

  // ---- 2 GiB
  step('big.db (2 GiB)');
  const big = { open: await open(cfg.files.big) };
  big.facts = await facts();
  big.error = await errorText();
  big.mapSummary = await page.textContent('#map-summary');
  big.legend = await legend();
  big.zoomLabel = await page.textContent('#zoom-label');
  big.paintedCells = await page.evaluate(() => {
    const c = document.querySelector('#map');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let lit = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] || d[i + 1] || d[i + 2]) lit++;
    return lit;
  });
  await page.waitForSelector('#bucket-tree li[data-path]', { timeout: T });
  big.buckets = await buckets();
  // Zoom in once, then decode the cell under the pointer.
  await page.click('#zoom-in');
  await page.waitForFunction((before) => document.querySelector('#zoom-label').textContent !== before, big.zoomLabel, { timeout: T });
  big.zoomedLabel = await page.textContent('#zoom-label');
  const c5 = await cellCenter(5);
  await page.mouse.click(c5.x, c5.y);
  big.detail = await detailHeading('');
  big.keys = await keyScreens('fake-bucket', 1);
  big.memory = await page.evaluate(() => window.mapwise.state.memory);
  await page.screenshot({ path: path.join(cfg.screens, 'bolt-2gib.png'), fullPage: true });
  await page.screenshot({ path: cfg.screenshot, fullPage: true });

  Object.assign(report, { small, etcd, trace, revlog, rrd, junk, corrupt, after, dropped, big });
} catch (e) {
  report.failure = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}

process.stdout.write(`${JSON.stringify(report)}\n`);
