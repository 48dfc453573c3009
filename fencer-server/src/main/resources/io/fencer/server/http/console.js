// The Fencer console: polls /console/state, /console/events and /console/refusals and draws them. Every name and identity is put in
// the page as text (textContent), never as HTML, so a lock named <script>... is shown as those characters.
'use strict';

const HEADERS = { 'Content-Type': 'application/json', 'X-Fencer-Console': '1' };
const EVENTS_KEPT = 200;
let position = { revision: 0, ordinal: 0 };
// The next refused store write to ask for: 0 = all the server keeps, so a page opened after a refusal shows it.
let refusalPosition = 0;
let leases = [];
let drawnLocks = '';

async function call(route, body) {
  const response = await fetch('/console/' + route, { method: 'POST', headers: HEADERS, body: JSON.stringify(body),
    credentials: 'same-origin', cache: 'no-store' });
  const json = await response.json();
  if (!response.ok || json.error) {
    const error = new Error(json.error ? json.error.message : 'HTTP ' + response.status);
    error.code = json.error ? json.error.code : 'unknown';
    throw error;
  }
  return json;
}

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function say(text) {
  document.getElementById('status').textContent = text;
}

function lockRow(lock) {
  const row = document.createElement('tr');
  row.dataset.lock = lock.lock;
  cell(row, lock.lock, 'name');
  cell(row, lock.token === undefined ? (lock.shared ? lock.shared + ' shared' : '-') : String(lock.token), 'token');
  cell(row, lock.holderIdentity === undefined ? (lock.delayed ? 'free (lock-delay)' : 'free') : lock.holderIdentity,
    'holder');
  cell(row, '-', 'lease');
  const unlisted = lock.waitersTotal - lock.waiters.length;
  cell(row, lock.waiters.length ? lock.waiters.map(s => 'session ' + s).join(', ')
    + (unlisted > 0 ? ' and ' + unlisted + ' more' : '') : 'none', 'waiters');
  const action = cell(row, '', 'action');
  if (lock.canRevoke) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'revoke';
    button.textContent = 'Revoke';
    button.setAttribute('aria-label', 'Revoke ' + lock.lock + '#' + lock.token);
    button.addEventListener('click', () => revoke(lock.lock, lock.token, lock.holderIdentity));
    action.appendChild(button);
  }
  return row;
}

function drawLocks(locks, more) {
  const body = document.querySelector('#locks tbody');
  leases = [];
  if (locks.error) {
    body.replaceChildren();
    drawnLocks = '';
    document.getElementById('locks-note').textContent = 'Locks: ' + locks.error.message;
    return;
  }
  // Rows are redrawn only when what they show changed, so that the focus (keyboard users) and a button about to be
  // pressed stay; the leases, renewed all the time, are counted down in place.
  const shown = JSON.stringify(locks.map(l => [l.lock, l.token, l.holderIdentity, l.waiters, l.canRevoke, l.delayed,
    l.shared, l.waitersTotal]));
  if (shown !== drawnLocks) {
    body.replaceChildren(...locks.map(lockRow));
    drawnLocks = shown;
  }
  leases = [];
  locks.forEach((lock, i) => {
    if (lock.leaseRemainingMillis !== undefined && lock.leaseRemainingMillis >= 0) {
      leases.push({ element: body.children[i].querySelector('td.lease'),
        deadline: Date.now() + lock.leaseRemainingMillis });
    }
  });
  document.getElementById('locks-note').textContent = !locks.length ? 'No lock is held, waited for or delayed.'
    : more ? 'Showing the first ' + locks.length + ' locks: a longer name prefix shows the others.' : '';
  tick();
}

function drawPeers(peers, peer) {
  const body = document.querySelector('#peers tbody');
  document.getElementById('peer').textContent = peer.error ? '?' : peer.id + (peer.leader ? ' (leader)' : '')
    + ', applied ' + peer.appliedIndex;
  if (peers.error) {
    body.replaceChildren();
    document.getElementById('peers-note').textContent = 'Peers: ' + peers.error.message;
    return;
  }
  document.getElementById('peers-note').textContent = '';
  body.replaceChildren(...peers.map(p => {
    const row = document.createElement('tr');
    cell(row, p.id, 'name');
    cell(row, p.clientAddress);
    cell(row, p.role + (p.leader ? ', leader' : ''));
    cell(row, p.matchIndex == null ? 'unknown' : String(p.matchIndex));
    return row;
  }));
}

function tick() {
  const now = Date.now();
  for (const lease of leases) {
    const left = Math.max(0, lease.deadline - now);
    lease.element.textContent = (left / 1000).toFixed(1) + ' s';
  }
}

function eventText(event) {
  let text = event.kind.replace('_', ' ') + ' ' + event.lock + (event.token !== undefined ? '#' + event.token : '')
    + ' session ' + event.sessionId;
  if (event.endCause) text += ' (' + event.endCause.replace('_', ' ') + ')';
  if (event.revokedBy) text += ' by ' + event.revokedBy;
  if (event.holderIdentity) text += ' (' + event.holderIdentity + ')';
  return text;
}

function refusalText(refusal) {
  let text = 'refused write to ' + refusal.scope;
  if (refusal.presented && refusal.accepted) {
    return text + ': token ' + refusal.presented + ' < accepted ' + refusal.accepted + ' (' + refusal.reason + ')';
  }
  if (refusal.presented) text += ': token ' + refusal.presented;
  return text + ' (' + refusal.reason + ')';
}

// Puts an item in the feed, newest first, by its time (ms): lock events at the time the page saw them, refusals at
// the time the server recorded them (now minus their age), so the two feeds merge in the order things happened.
function addItem(list, at, text, kind, className) {
  const item = document.createElement('li');
  const time = document.createElement('time');
  time.textContent = new Date(at).toLocaleTimeString() + ' ';
  time.dateTime = new Date(at).toISOString();
  item.appendChild(time);
  const span = document.createElement('span');
  span.textContent = text;
  if (className) span.className = className;
  item.appendChild(span);
  item.dataset.kind = kind;
  item.dataset.at = String(at);
  let before = list.firstChild;
  while (before && Number(before.dataset.at) > at) before = before.nextSibling;
  list.insertBefore(item, before);
}

function addEvents(events) {
  const list = document.getElementById('events');
  const seen = Date.now();
  for (const event of events) {
    addItem(list, seen, eventText(event), event.kind, event.endCause === 'revoked' ? 'revoked' : '');
  }
  while (list.children.length > EVENTS_KEPT) list.lastChild.remove();
}

function addRefusals(refusals) {
  const list = document.getElementById('events');
  const now = Date.now();
  for (const refusal of refusals) {
    addItem(list, now - refusal.ageMillis, refusalText(refusal), 'refused', 'refused');
  }
  while (list.children.length > EVENTS_KEPT) list.lastChild.remove();
}

async function refresh() {
  try {
    const state = await call('state', { prefix: document.getElementById('prefix').value });
    document.getElementById('identity').textContent = state.identity;
    drawLocks(state.locks, state.locksMore);
    drawPeers(state.peers, state.peer);
    const updated = document.getElementById('updated');
    updated.textContent = new Date().toLocaleTimeString();
    updated.dateTime = new Date().toISOString();
  } catch (e) {
    say('Could not read the state: ' + e.message);
  }
}

async function pollEvents() {
  try {
    const answer = await call('events', { prefix: document.getElementById('prefix').value,
      revision: position.revision, ordinal: position.ordinal });
    position = { revision: answer.revision, ordinal: answer.ordinal };
    if (answer.events.length) {
      addEvents(answer.events);
      refresh();
    }
  } catch (e) {
    if (e.code === 'out_of_range') position = { revision: 0, ordinal: 0 };
    say('Events: ' + e.message);
    await new Promise(resolve => setTimeout(resolve, 2000));
  }
  setTimeout(pollEvents, 700);
}

async function pollRefusals() {
  try {
    const answer = await call('refusals', { prefix: document.getElementById('prefix').value,
      position: refusalPosition });
    if (!answer.store) return; // this server hosts no store: nothing will be refused
    refusalPosition = answer.position;
    addRefusals(answer.refusals);
  } catch (e) {
    say('Refused writes: ' + e.message);
  }
  setTimeout(pollRefusals, 1000);
}

async function revoke(lock, token, holder) {
  if (!window.confirm('Revoke ' + lock + '#' + token + ' held by ' + holder + '? Its holder loses the lock now.')) {
    return;
  }
  try {
    const answer = await call('revoke', { lock: lock, token: token });
    say('Revoked ' + answer.revoked + (answer.next ? '; granted next: ' + answer.next
      : answer.delayed ? '; the lock waits out its lock-delay' : '; no waiter'));
  } catch (e) {
    say('Revoke refused: ' + e.message);
  }
  refresh();
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('filter').addEventListener('submit', e => { e.preventDefault(); refresh(); });
  refresh();
  pollEvents();
  pollRefusals();
  setInterval(refresh, 3000);
  setInterval(tick, 250);
});
