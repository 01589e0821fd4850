// The sparrowd dashboard: a live view of the server from its admin API's event stream
// (GET /admin/v1/events), and its controls (cancel, drain, resume, log level, reload; the memory
// budget is memory.js's).
// Plain browser JavaScript, no libraries: the server serves these files from its binary.
'use strict';

const KEY_ITEM = 'sparrow-admin-key';  // sessionStorage: this tab only, gone when it closes
const HISTORY = 120;                   // chart points: two minutes of one-second snapshots
const $ = (id) => document.getElementById(id);

let abort = null;  // ends the current event stream
let shardTimer = null;  // polls where the model's layers are (GET /admin/v1/shards)
const history = { tps: [], ttft50: [], ttft99: [], tbt99: [], running: [], waiting: [] };

function key() { return sessionStorage.getItem(KEY_ITEM) || ''; }

// What the login field holds, as the key: a whole line of the admin_key_file ("laptop 6f1c...")
// is its name then the key, so the key is the last word.
function keyOfInput(text) {
  const words = text.trim().split(/\s+/);
  return words[words.length - 1];
}

async function api(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${key()}` } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const json = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error(json.error?.message || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.code = json.error?.code;
    throw err;
  }
  return json;
}

function showLogin(message) {
  if (abort) abort.abort();
  clearInterval(shardTimer);
  $('main').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('link').textContent = 'not connected';
}

async function connect() {
  try {
    const status = await api('GET', '/admin/v1/status');
    $('login').hidden = true;
    $('main').hidden = false;
    $('logout').hidden = false;
    render(status);
    loadModels();
    loadMemory();
    loadShards();
    clearInterval(shardTimer);
    shardTimer = setInterval(loadShards, 2000);
    watch();
  } catch (e) {
    sessionStorage.removeItem(KEY_ITEM);
    showLogin(e.status === 401 || e.status === 403 ? `Refused: ${e.message}` : e.message);
  }
}

// Server-sent events over fetch (EventSource cannot send the Authorization header).
async function watch() {
  abort = new AbortController();
  let res;
  try {
    res = await fetch('/admin/v1/events', {
      headers: { Authorization: `Bearer ${key()}` }, signal: abort.signal });
  } catch (e) {
    if (e.name !== 'AbortError') retry();
    return;
  }
  if (res.status === 401 || res.status === 403) return showLogin('The key was refused.');
  if (!res.ok || !res.body) return retry();
  $('link').textContent = 'live';
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        onEvent(buf.slice(0, end));
        buf = buf.slice(end + 2);
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') return;
  }
  retry();
}

function retry() {
  $('link').textContent = 'reconnecting…';
  setTimeout(() => { if (!$('main').hidden) watch(); }, 2000);
}

function onEvent(block) {
  let type = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  if (data.length === 0) return;  // a keep-alive comment
  const payload = JSON.parse(data.join('\n'));
  if (type === 'status') render(payload);
  if (type === 'action') logAction(payload);
}

function fmtBytes(n) {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${Math.round(n / 1024)} KiB`;
}
function fmtMs(v) { return v >= 100 ? `${Math.round(v)} ms` : `${v.toFixed(1)} ms`; }
function fmtAge(ms) { return ms >= 60000 ? `${(ms / 60000).toFixed(1)} min` : `${(ms / 1000).toFixed(1)} s`; }
function pct(part, whole) { return whole > 0 ? Math.min(100, (100 * part) / whole) : 0; }

function push(name, v) {
  const h = history[name];
  h.push(v);
  if (h.length > HISTORY) h.shift();
}

// Speculative decoding: the share of draft tokens the target accepted, all sources together,
// and each source that drafted. Hidden on a server that neither drafts nor got a prediction.
function renderSpeculative(spec) {
  const drafted = spec.sources.filter((x) => Number(x.drafted_tokens) > 0);
  $('spec').hidden = spec.type === 'none' && drafted.length === 0;
  if ($('spec').hidden) return;
  const total = drafted.reduce((n, x) => n + Number(x.drafted_tokens), 0);
  const accepted = drafted.reduce((n, x) => n + Number(x.accepted_tokens), 0);
  $('spec-type').textContent = spec.type;
  $('spec-text').textContent = total
    ? `${accepted} of ${total} draft tokens accepted (${(100 * accepted / total).toFixed(1)}%)`
    : 'nothing drafted yet';
  $('spec-accepted').style.width = `${pct(accepted, total)}%`;
  $('spec-sources').textContent = drafted
    .map((x) => `${x.source} ${(100 * x.acceptance).toFixed(1)}%`)
    .join(', ');
}

function render(s) {
  // state: loaded, or sleeping (unloaded when idle; the next request loads it).
  const asleep = s.model.state === 'sleeping' ? ' · sleeping' : '';
  $('model-id').textContent =
    `${s.model.id} · ${s.model.architecture} · ${fmtBytes(s.model.file_bytes)}${asleep}`;
  const state = s.drained ? 'drained' : s.draining ? 'draining' : 'serving';
  $('state').textContent = state;
  $('state').className = `tag ${s.draining ? 'draining' : ''}`;
  $('uptime').textContent = `v${s.version} · up ${fmtAge(s.uptime_s * 1000)} · ${s.threads} threads`;
  const t = s.throughput;
  $('tokens-per-s').textContent = t.tokens_per_s_10s.toFixed(1);
  $('tokens-per-s-60').textContent = t.tokens_per_s_60s.toFixed(1);
  $('running').textContent = s.running;
  $('waiting').textContent = s.waiting;
  $('finished').textContent = t.requests_finished;
  const l = s.latency;
  $('ttft').textContent = l.ttft_ms.count ? `${fmtMs(l.ttft_ms.p50)} / ${fmtMs(l.ttft_ms.p99)}` : '-';
  $('tbt').textContent = l.tbt_ms.count ? `p50 ${fmtMs(l.tbt_ms.p50)}, p99 ${fmtMs(l.tbt_ms.p99)}` : '-';
  $('rss').textContent = fmtBytes(s.memory.rss_bytes);
  $('budget').textContent = s.memory.budget_bytes
    ? `held ${fmtBytes(s.memory.held_bytes)}, budget ${fmtBytes(s.memory.budget_bytes)}`
    : 'no budget set';
  const kv = s.kv;
  $('kv-text').textContent = `${kv.blocks_used} used, ${kv.blocks_cached} cached, ${kv.blocks_free} free of ${kv.blocks_total}`;
  $('kv-used').style.width = `${pct(kv.blocks_used, kv.blocks_total)}%`;
  $('kv-cached').style.width = `${pct(kv.blocks_cached, kv.blocks_total)}%`;
  $('ffn-mode').textContent = s.sparse.mode;
  $('ffn-text').textContent = `${(100 * s.sparse.active_fraction).toFixed(1)}%`;
  $('ffn-active').style.width = `${100 * s.sparse.active_fraction}%`;
  $('prefix-text').textContent = `${(100 * kv.prefix_hit_rate).toFixed(1)}%`;
  $('prefix-hit').style.width = `${100 * kv.prefix_hit_rate}%`;
  renderSpeculative(s.speculative);
  renderMemory(s);
  if (document.activeElement !== $('log-level')) $('log-level').value = s.log_level;

  push('tps', t.tokens_per_s_10s);
  push('ttft50', l.ttft_ms.p50);
  push('ttft99', l.ttft_ms.p99);
  push('tbt99', l.tbt_ms.p99);
  push('running', s.running);
  push('waiting', s.waiting);
  chart($('chart-tps'), [[history.tps, '#2f6fde']]);
  chart($('chart-lat'), [[history.ttft50, '#2f6fde'], [history.ttft99, '#c0392b'], [history.tbt99, '#27ae60']]);
  chart($('chart-req'), [[history.running, '#2f6fde'], [history.waiting, '#e67e22']]);
  renderRequests(s.requests);
}

// A small line chart: each series scaled to the largest value shown.
function chart(canvas, series) {
  const g = canvas.getContext('2d');
  const w = canvas.width, h = canvas.height, pad = 18;
  g.clearRect(0, 0, w, h);
  const max = Math.max(1e-9, ...series.flatMap(([v]) => v));
  g.strokeStyle = '#d9dde6';
  g.beginPath();
  g.moveTo(pad, pad); g.lineTo(pad, h - pad); g.lineTo(w - 4, h - pad);
  g.stroke();
  g.fillStyle = '#6b7385';
  g.font = '11px system-ui, sans-serif';
  g.fillText(max >= 10 ? max.toFixed(0) : max.toFixed(1), pad + 4, pad - 4);
  for (const [values, color] of series) {
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    // The newest point at the right edge; older ones scroll left.
    const shift = HISTORY - values.length;
    values.forEach((v, i) => {
      const x = pad + ((w - pad - 4) * (i + shift)) / (HISTORY - 1);
      const y = h - pad - ((h - 2 * pad) * v) / max;
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

function renderRequests(list) {
  const body = $('requests').querySelector('tbody');
  body.replaceChildren(...list.map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.id = r.id;
    const cells = [r.id, r.state, `${r.frontend} ${r.route}`, r.remote, r.key_id, fmtAge(r.age_ms),
                   r.prompt_tokens, `${r.generated_tokens} / ${r.max_tokens}`];
    for (const c of cells) {
      const td = document.createElement('td');
      td.textContent = String(c);  // text, never HTML: ids and keys come from clients
      tr.append(td);
    }
    const td = document.createElement('td');
    const b = document.createElement('button');
    b.className = 'cancel';
    b.textContent = r.cancelling ? 'cancelling' : 'Cancel';
    b.disabled = r.cancelling;
    b.addEventListener('click', () => act(`cancel ${r.id}`, () =>
      api('DELETE', `/admin/v1/requests/${encodeURIComponent(r.id)}`)));
    td.append(b);
    tr.append(td);
    return tr;
  }));
  if (list.length === 0) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 9;
    td.className = 'dim';
    td.textContent = 'nothing running or waiting';
    tr.append(td);
    body.append(tr);
  }
}

function logAction(a) {
  const li = document.createElement('li');
  const when = new Date().toLocaleTimeString();
  li.textContent = `${when} ${a.action} ${JSON.stringify(a.args)} → ${a.result}` +
                   `${a.detail ? `: ${a.detail}` : ''} (${a.key_id || a.remote})`;
  $('action-log').prepend(li);
  if (a.action === 'reload') {
    loadModels();
    loadMemory();
  }
}

// Which device computes which layers, and each worker link's counters.
async function loadShards() {
  let s;
  try {
    s = await api('GET', '/admin/v1/shards');
  } catch (e) {
    $('shards-note').textContent = e.message;
    return;
  }
  const body = $('shards').querySelector('tbody');
  body.replaceChildren(...s.placement.map((p) => {
    const link = s.links.find((l) => l.address === p.device && l.first_layer === p.first_layer);
    // In a tensor split every device has every layer: its slice of them says what it computes.
    const layers = `${p.first_layer}..${p.end_layer - 1} (${p.end_layer - p.first_layer})`;
    const cells = [p.device, p.slice ? `${layers}, ${p.slice}` : layers];
    if (link) {
      cells.push(link.connected ? 'connected' : 'reconnecting', link.steps, link.failures,
                 `${fmtBytes(link.bytes_sent)} / ${fmtBytes(link.bytes_received)}`,
                 `${Math.round(link.worker_ms)} / ${Math.round(link.wall_ms)}`, link.last_error);
    } else {
      cells.push('this device', '', '', '', '', '');
    }
    const tr = document.createElement('tr');
    for (const c of cells) {
      const td = document.createElement('td');
      td.textContent = String(c);
      tr.append(td);
    }
    return tr;
  }));
  const down = s.devices_down?.length ? `; down: ${s.devices_down.join(', ')}` : '';
  $('shards-note').textContent = s.links.length || s.replans
    ? `placed ${s.replans ? `again ${s.replans} times` : 'once'}${down}`
    : 'one device computes every layer';
}

async function loadModels() {
  const select = $('reload-model');
  try {
    const { data } = await api('GET', '/admin/v1/models');
    select.replaceChildren(...data.map((m) => {
      const o = document.createElement('option');
      o.value = m.name;
      const state = m.state && m.state !== 'available' ? `, ${m.state}` : '';
      o.textContent = `${m.serving ? '● ' : ''}${m.name} (${fmtBytes(m.bytes)}${state})`;
      o.selected = m.serving;
      return o;
    }));
    select.disabled = $('reload').disabled = false;
  } catch (e) {
    const o = document.createElement('option');
    o.textContent = e.code === 'reload_disabled' ? 'reload off (--model-dir)' : e.message;
    select.replaceChildren(o);
    select.disabled = $('reload').disabled = true;
  }
}

async function act(what, fn) {
  $('control-msg').textContent = `${what}…`;
  try {
    await fn();
    $('control-msg').textContent = `${what}: done`;
  } catch (e) {
    $('control-msg').textContent = `${what}: ${e.message}`;
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_ITEM, keyOfInput($('key').value));
    $('key').value = '';
    connect();
  });
  $('logout').addEventListener('click', () => {
    sessionStorage.removeItem(KEY_ITEM);
    showLogin('');
  });
  $('drain').addEventListener('click', () => act('drain', () => api('POST', '/admin/v1/drain')));
  $('resume').addEventListener('click', () => act('resume', () => api('POST', '/admin/v1/resume')));
  $('log-level').addEventListener('change', () => act(`log level ${$('log-level').value}`, () =>
    api('PUT', '/admin/v1/log-level', { level: $('log-level').value })));
  $('reload').addEventListener('click', () => act(`reload ${$('reload-model').value}`, () =>
    api('POST', '/admin/v1/reload', { model: $('reload-model').value })));
  if (key()) connect(); else showLogin('');
});
