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

/** One memory as a list item: text, tags, time, score and explanation when given, and a guarded delete. */
function memoryItem(memory, { score, explanation } = {}) {
  const item = element('li', 'memory');
  item.dataset.id = memory.id;
  item.append(element('p', 'text', memory.text));
  const meta = element('div', 'meta');
  if (score !== undefined) meta.append(element('span', 'score', `score ${score.toFixed(3)}`));
  for (const tag of memory.tags) meta.append(element('span', 'tag', tag));
  meta.append(element('time', null, (memory.occurred_at ?? memory.created_at).replace('T', ' ').slice(0, 16)));
  meta.append(element('span', 'source', memory.source));
  const actions = element('span', 'actions');
  actions.append(button('Delete', 'secondary delete', () => confirmDelete(item, memory, actions)));
  meta.append(actions);
  item.append(meta);
  if (explanation) item.append(explanationTable(explanation));
  return item;
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

async function browse(event) {
  event?.preventDefault();
  const memories = await attempt(() => api('GET', `/mem/list?${query({ tag: $('#browse-tag').value.trim(), limit: $('#browse-limit').value, user_id: currentUser() })}`));
  if (!memories) return;
  say('');
  showList($('#browse-results'), memories.map((memory) => memoryItem(memory)), 'Nothing stored yet for this user.');
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
$('#browse-form').addEventListener('submit', browse);
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
