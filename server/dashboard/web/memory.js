// The dashboard's memory view and control: the neuron cache's occupancy and hit rate (from the
// status), and the operator's memory budget (PUT and DELETE /admin/v1/memory/budget). Loaded
// before dashboard.js, which calls renderMemory with each status and loadMemory on connect;
// api, fmtBytes, pct and $ are dashboard.js's.
'use strict';

// The sizes an operator types, as sparrowctl reads them: "1.5G", "800M", "800MiB", "2GB",
// "65536"; K, M, G and T (with or without "B" or "iB") are powers of 1024. Throws naming the text.
function parseByteSize(text) {
  const m = /^(\d+\.?\d*|\.\d+)([KMGT]?)(I?B)?$/i.exec(text.trim());
  if (!m || (m[3] && m[3].toUpperCase() === 'IB' && !m[2])) {
    throw new Error(`'${text}' is not a size (examples: 1.5G, 800M, 65536)`);
  }
  const scale = m[2] ? 1024 ** ('KMGT'.indexOf(m[2].toUpperCase()) + 1) : 1;
  const bytes = Math.floor(Number(m[1]) * scale);
  if (!Number.isSafeInteger(bytes)) throw new Error(`'${text}' is too large`);
  return bytes;
}

// The neuron cache row: only for a model whose FFN is on flash (the status has no cache else).
function renderNeuronCache(c) {
  $('neuron-cache').hidden = !c;
  if (!c) return;
  $('nc-text').textContent = `${fmtBytes(c.resident_bytes)} of ${fmtBytes(c.capacity_bytes)}`;
  $('nc-used').style.width = `${pct(c.resident_bytes, c.capacity_bytes)}%`;
  // No rate before the first lookup: 0 % would read as a cache that never hits.
  $('nc-hit-rate').textContent =
    c.hit_rate === undefined ? '-' : `${(100 * c.hit_rate).toFixed(1)}%`;
  $('nc-lookups').textContent = String(c.lookups);
}

// The budget in force and its bounds, from the status's memory or a /admin/v1/memory answer
// (the same field names; the exact bytes are kept in data- attributes).
function renderBudget(m) {
  const el = $('budget-bounds');
  if (m.floor_bytes === undefined) return;  // no memory governor: loadMemory said why
  const op = m.operator_budget_bytes ?? null;
  el.dataset.budget = String(m.budget_bytes);
  el.dataset.ceiling = String(m.ceiling_bytes);
  el.dataset.operator = op === null ? '' : String(op);
  el.textContent = `${fmtBytes(m.budget_bytes)} in force, ` +
    `${op === null ? "the device's" : `the operator's ${fmtBytes(op)}`} ` +
    `(ceiling ${fmtBytes(m.ceiling_bytes)}, floor ${fmtBytes(m.floor_bytes)})`;
}

function renderMemory(s) {
  renderNeuronCache(s.sparse.neuron_cache);
  renderBudget(s.memory);
}

function setMemoryControl(enabled) {
  for (const id of ['budget-size', 'budget-set', 'budget-clear']) $(id).disabled = !enabled;
}

// Whether the server runs a memory governor: when it does not, the controls are disabled and
// its answer (which names the setting to change) says why.
async function loadMemory() {
  try {
    renderBudget(await api('GET', '/admin/v1/memory'));
    setMemoryControl(true);
    $('budget-msg').textContent = '';
  } catch (e) {
    setMemoryControl(false);
    $('budget-bounds').textContent = '';
    $('budget-msg').className = 'dim';
    $('budget-msg').textContent = e.message;
  }
}

async function budgetAction(what, fn) {
  const msg = $('budget-msg');
  msg.className = 'dim';
  msg.textContent = `${what}…`;
  try {
    renderBudget(await fn());
    msg.textContent = `${what}: done`;
  } catch (e) {
    msg.className = 'error';
    msg.textContent = `${what}: ${e.message}`;  // the server's reason, e.g. the floor it needs
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('budget-set').addEventListener('click', () => {
    const text = $('budget-size').value;
    budgetAction(`budget ${text.trim()}`, () => api('PUT', '/admin/v1/memory/budget',
                                                    { bytes: parseByteSize(text) }));
  });
  $('budget-size').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') $('budget-set').click();
  });
  $('budget-clear').addEventListener('click', () =>
    budgetAction('clear budget', () => api('DELETE', '/admin/v1/memory/budget')));
});
