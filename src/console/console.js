// The memorypool console: plain browser JavaScript over the same HTTP API and token as every
// other client (no build step, no CDN). Memory text is user data: it only ever goes into the
// page as textContent, never as markup.

const TOKEN_KEY = 'memorypool.token';
const USER_KEY = 'memorypool.user';
const $ = (selector) => document.querySelector(selector);

/** The API's answer as JSON; throws an Error carrying the API's reason (and its status). */
async function api(method, path, body) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = answer?.detail;
    const reason = typeof detail?.reason === 'string' ? detail.reason : Array.isArray(detail) ? detail.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ') : `HTTP ${response.status}`;
    throw Object.assign(new Error(reason), { status: response.status });
  }
  return answer;
}

function currentUser() {
  return $('#user').value.trim() || 'default';
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value));
  return search.toString();
}

function say(message, isError = false) {
  const status = $('#status');
  status.hidden = !message;
  status.textContent = message ?? '';
  status.classList.toggle('error', isError);
}

/** Runs an action, showing its failure; a 401 sends the user to the token form. */
async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    if (error.status === 401) askForToken(error.message);
    else say(error.message, true);
    return undefined;
  }
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(label, className, onClick) {
  const node = element('button', className, label);
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

/** One memory as a list item: text, tags, scopes, expiry, metadata, time, score and explanation when given; edit, history and a guarded delete. */
function memoryItem(memory, { score, explanation } = {}) {
  const item = element('li', 'memory');
  item.dataset.id = memory.id;
  item.append(element('p', 'text', memory.text));
  const meta = element('div', 'meta');
  if (score !== undefined) meta.append(element('span', 'score', `score ${score.toFixed(3)}`));
  for (const tag of memory.tags) meta.append(element('span', 'tag', tag));
  if (memory.agent_id !== undefined) meta.append(element('span', 'scope agent', `agent ${memory.agent_id}`));
  if (memory.run_id !== undefined) meta.append(element('span', 'scope run', `run ${memory.run_id}`));
  for (const [key, value] of Object.entries(memory.metadata ?? {})) meta.append(element('span', 'meta-pair', `${key}=${JSON.stringify(value)}`));
  meta.append(element('time', null, (memory.occurred_at ?? memory.created_at).replace('T', ' ').slice(0, 16)));
  if (memory.expires_at !== undefined) meta.append(element('span', 'expires', `expires ${memory.expires_at.replace('T', ' ').slice(0, 16)}`));
  meta.append(element('span', 'source', memory.source));
  meta.append(element('span', 'version', `v${memory.version}`));
  const actions = element('span', 'actions');
  actions.append(
    button('Edit', 'secondary edit', () => editMemory(item, memory)),
    button('History', 'secondary history', () => showHistory(item, memory)),
    button('Delete', 'secondary delete', () => confirmDelete(item, memory, actions)),
  );
  meta.append(actions);
  item.append(meta);
  if (explanation) item.append(explanationTable(explanation));
  return item;
}

function labelled(form, label, input) {
  form.append(element('label', null, label), input);
  return input;
}

/** Edits a memory in place: every field it has, scopes and expiry included (empty clears them); only what changed is sent, as one new version. */
function editMemory(item, memory) {
  item.querySelector('form.edit')?.remove();
  const form = element('form', 'edit');
  const text = labelled(form, 'text', Object.assign(element('textarea', 'edit-text'), { value: memory.text, rows: 3 }));
  const tags = labelled(form, 'tags', Object.assign(element('input', 'edit-tags'), { value: memory.tags.join(', ') }));
  const importance = labelled(form, 'importance', Object.assign(element('input', 'edit-importance'), { type: 'number', min: 0, max: 1, step: 0.05, value: memory.importance }));
  const metadata = labelled(form, 'metadata (JSON)', Object.assign(element('textarea', 'edit-metadata'), { value: JSON.stringify(memory.metadata ?? {}), rows: 2 }));
  const agent = labelled(form, 'agent', Object.assign(element('input', 'edit-agent'), { value: memory.agent_id ?? '' }));
  const run = labelled(form, 'run', Object.assign(element('input', 'edit-run'), { value: memory.run_id ?? '' }));
  const expires = labelled(form, 'expires at', Object.assign(element('input', 'edit-expires'), { value: memory.expires_at ?? '', placeholder: 'ISO 8601; empty: never' }));
  const buttons = element('div', 'buttons');
  const save = Object.assign(element('button', 'save-edit', 'Save'), { type: 'submit' });
  buttons.append(save, button('Cancel', 'secondary cancel-edit', () => form.remove()));
  form.append(buttons);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    let parsedMetadata;
    try {
      parsedMetadata = JSON.parse(metadata.value || '{}');
    } catch {
      say('metadata: not valid JSON', true);
      return;
    }
    const wanted = {
      text: text.value,
      tags: tags.value.split(',').map((tag) => tag.trim()).filter(Boolean),
      importance: Number(importance.value),
      metadata: parsedMetadata,
      agent_id: agent.value.trim() || null,
      run_id: run.value.trim() || null,
      expires_at: expires.value.trim() || null,
    };
    const before = { text: memory.text, tags: memory.tags, importance: memory.importance, metadata: memory.metadata ?? {}, agent_id: memory.agent_id ?? null, run_id: memory.run_id ?? null, expires_at: memory.expires_at ?? null };
    const patch = Object.fromEntries(Object.entries(wanted).filter(([key, value]) => JSON.stringify(value) !== JSON.stringify(before[key])));
    if (Object.keys(patch).length === 0) {
      say('Nothing changed.');
      return;
    }
    const updated = await attempt(() => api('PATCH', `/mem/${encodeURIComponent(memory.id)}?${query({ user_id: memory.user_id })}`, patch));
    if (!updated) return;
    item.replaceWith(memoryItem(updated));
    say(`Saved as version ${updated.version}.`);
  });
  item.append(form);
  text.focus();
}

/** A memory's versions, oldest first, the current one last, under the memory. */
async function showHistory(item, memory) {
  const history = await attempt(() => api('GET', `/mem/${encodeURIComponent(memory.id)}/history?${query({ user_id: memory.user_id })}`));
  if (!history) return;
  item.querySelector('ol.history')?.remove();
  const list = element('ol', 'history');
  for (const version of history.versions) {
    const entry = element('li', 'version');
    const scopes = [version.agent_id && `agent ${version.agent_id}`, version.run_id && `run ${version.run_id}`, version.expires_at && `expires ${version.expires_at}`].filter(Boolean).join(', ');
    entry.append(
      element('strong', null, `v${version.version} `),
      element('span', null, `${version.updated_at.replace('T', ' ').slice(0, 19)}: `),
      element('span', 'text', version.text),
      element('span', null, ` [${version.tags.join(', ')}] importance ${version.importance}${scopes ? `; ${scopes}` : ''}; metadata ${JSON.stringify(version.metadata)}`),
    );
    list.append(entry);
  }
  item.append(list);
}

/** Deleting is for good, so it takes a second, explicit click. */
function confirmDelete(item, memory, actions) {
  const restore = [...actions.childNodes];
  const cancel = () => actions.replaceChildren(...restore);
  actions.replaceChildren(
    element('span', 'confirm', 'Delete this memory for good?'),
    button('Yes, delete', 'danger confirm-delete', async () => {
      const done = await attempt(() => api('DELETE', `/mem/${encodeURIComponent(memory.id)}?${query({ user_id: memory.user_id })}`));
      if (done) {
        item.remove();
        say('Memory deleted.');
      } else cancel();
    }),
    button('Cancel', 'secondary cancel-delete', cancel),
  );
}

/** A hit's score as the sum and product of its terms, as the retrieval fused them. */
function explanationTable(explanation) {
  const table = element('table', 'explanation');
  const head = element('tr');
  head.append(element('th', null, 'term'), element('th', null, ''), element('th', null, 'value'));
  table.append(head);
  for (const term of explanation.terms) {
    const row = element('tr');
    row.append(element('td', null, term.term), element('td', null, term.kind === 'multiply' ? '×' : '+'), element('td', 'value', term.value.toFixed(4)));
    table.append(row);
  }
  return table;
}

function showList(target, items, emptyText) {
  target.replaceChildren(...(items.length > 0 ? items : [element('li', 'empty', emptyText)]));
}

async function search(event) {
  event?.preventDefault();
  const params = { q: $('#search-query').value, tag: $('#search-tag').value.trim(), limit: $('#search-limit').value, user_id: currentUser() };
  if ($('#search-explain').checked) params.explain = 'true';
  const hits = await attempt(() => api('GET', `/mem/search?${query(params)}`));
  if (!hits) return;
  say('');
  showList($('#search-results'), hits.map((hit) => memoryItem(hit, { score: hit.score, explanation: hit.explanation })), 'No memory matches.');
}

/** The Browse filters as the API's fields (POST /mem/list, POST /mem/delete). */
function browseFilters() {
  const fields = { user_id: currentUser() };
  for (const [name, id] of [['tag', '#browse-tag'], ['agent_id', '#browse-agent'], ['run_id', '#browse-run'], ['since', '#browse-since'], ['until', '#browse-until']]) {
    const value = $(id).value.trim();
    if (value !== '') fields[name] = /^\d+$/.test(value) ? Number(value) : value;
  }
  const pair = $('#browse-meta').value.trim();
  if (pair !== '') {
    const at = pair.indexOf('=');
    // A value is matched as the type the memory stored it with: numbers and booleans as such.
    const raw = at < 0 ? '' : pair.slice(at + 1);
    fields.filter = { [at < 0 ? pair : pair.slice(0, at)]: raw === 'true' ? true : raw === 'false' ? false : raw !== '' && !Number.isNaN(Number(raw)) ? Number(raw) : raw };
  }
  return fields;
}

let browseCursor = null;

/** The first page of the filtered list (or, with `more`, the next one through the cursor). */
async function browse(event, more = false) {
  event?.preventDefault();
  $('#delete-confirm').hidden = true;
  const body = { ...browseFilters(), limit: Number($('#browse-limit').value) || 50, ...(more && browseCursor ? { cursor: browseCursor } : {}) };
  const page = await attempt(() => api('POST', '/mem/list', body));
  if (!page) return;
  say('');
  browseCursor = page.next_cursor;
  $('#browse-more').hidden = page.next_cursor === null;
  const items = page.memories.map((memory) => memoryItem(memory));
  if (more) $('#browse-results').append(...items);
  else showList($('#browse-results'), items, 'Nothing stored yet for this user, or nothing matches.');
}

/**
 * Delete by filter: the filters as a `where` (agent, run, tag, metadata; the time window narrows
 * it), counted first with a dry run, deleted only after an explicit confirmation.
 */
async function deleteMatching() {
  const fields = browseFilters();
  const conditions = [];
  if (fields.agent_id !== undefined) conditions.push({ agent_id: fields.agent_id });
  if (fields.run_id !== undefined) conditions.push({ run_id: fields.run_id });
  if (fields.tag !== undefined) conditions.push({ tags: fields.tag });
  for (const [key, value] of Object.entries(fields.filter ?? {})) conditions.push({ [`metadata.${key}`]: value });
  if (conditions.length === 0) {
    say('Delete by filter needs an agent, a run, a tag or a metadata pair first.', true);
    return;
  }
  const body = { where: { $and: conditions }, user_id: fields.user_id, since: fields.since, until: fields.until };
  const counted = await attempt(() => api('POST', '/mem/delete', { ...body, dry_run: true }));
  if (!counted) return;
  const box = $('#delete-confirm');
  box.hidden = false;
  box.replaceChildren(
    element('span', 'count', `${counted.deleted} ${counted.deleted === 1 ? 'memory matches' : 'memories match'} these filters. Delete ${counted.deleted === 1 ? 'it' : 'them'} for good?`),
    button('Yes, delete them', 'danger confirm-delete-matching', async () => {
      const done = await attempt(() => api('POST', '/mem/delete', body));
      box.hidden = true;
      if (!done) return;
      await browse();
      say(`Deleted ${done.deleted}.`);
    }),
    button('Cancel', 'secondary cancel-delete-matching', () => (box.hidden = true)),
  );
}

async function add(event) {
  event.preventDefault();
  const tags = $('#add-tags').value.split(',').map((tag) => tag.trim()).filter(Boolean);
  const memory = await attempt(() => api('POST', '/mem', { text: $('#add-text').value, tags, importance: Number($('#add-importance').value), source: 'console', user_id: currentUser() }));
  if (!memory) return;
  say(`Stored for ${memory.user_id}.`);
  $('#add-text').value = '';
  $('#add-results').prepend(memoryItem(memory));
}

async function stats() {
  const pool = await attempt(() => api('GET', '/mem/stats'));
  if (!pool) return;
  const summary = [['memories', pool.count], ['users', pool.users], ['embedder', `${pool.embedder.model} (${pool.embedder.dimensions})`]];
  $('#stats-summary').replaceChildren(
    ...summary.map(([name, value]) => {
      const box = element('div');
      box.append(element('dt', null, name), element('dd', null, String(value)));
      return box;
    }),
  );
  $('#stats-table tbody').replaceChildren(
    ...pool.per_user.map((user) => {
      const row = element('tr');
      // Users within the exhaustive limit keep no HNSW graph: every Search scores all their memories.
      const index = !user.index.graph ? 'none (scored exhaustively)' : user.index.complete ? `${user.index.vectors} vectors` : 'building';
      row.append(element('td', null, user.user_id), element('td', 'number', String(user.count)), element('td', 'number', String(user.sessions)), element('td', 'number', bytes(user.bytes_on_disk)), element('td', null, index));
      return row;
    }),
  );
  $('#known-users').replaceChildren(...pool.per_user.map((user) => Object.assign(element('option'), { value: user.user_id })));
  return pool;
}

function bytes(size) {
  return size < 1024 ? `${size} B` : size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KiB` : `${(size / 1024 / 1024).toFixed(1)} MiB`;
}

function show(view) {
  for (const section of document.querySelectorAll('#views > section')) section.hidden = section.dataset.view !== view;
  for (const tab of document.querySelectorAll('nav button')) tab.classList.toggle('active', tab.dataset.view === view);
  say('');
  if (view === 'browse') void browse();
  if (view === 'stats') void stats();
}

function askForToken(reason) {
  $('#token-view').hidden = false;
  $('#views').hidden = true;
  say(reason, true);
  $('#token').focus();
}

async function start() {
  $('#token-view').hidden = true;
  $('#forget-token').hidden = !sessionStorage.getItem(TOKEN_KEY);
  // The stats call doubles as the token check and fills the user picker; the views show once it passed.
  if (await stats()) {
    say('');
    $('#views').hidden = false;
  }
}

$('#user').value = sessionStorage.getItem(USER_KEY) ?? 'default';
$('#user').addEventListener('change', () => {
  sessionStorage.setItem(USER_KEY, currentUser());
  const active = document.querySelector('nav button.active')?.dataset.view;
  if (active) show(active);
});
for (const tab of document.querySelectorAll('nav button')) tab.addEventListener('click', () => show(tab.dataset.view));
$('#search-form').addEventListener('submit', search);
$('#browse-form').addEventListener('submit', (event) => browse(event));
$('#browse-more').addEventListener('click', () => browse(undefined, true));
$('#browse-delete').addEventListener('click', () => void deleteMatching());
$('#add-form').addEventListener('submit', add);
$('#token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('#token').value.trim());
  $('#token').value = '';
  void start();
});
$('#forget-token').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});
void start();
