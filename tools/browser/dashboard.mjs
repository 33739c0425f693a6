// Drives the Rota dashboard in headless Chromium against a real `rota serve`, as an
// operator would: login, live task status, replay of a dead task, pausing a schedule, and
// the session and cross-site protections. Run by e2e/dashboard_test.go, which starts the
// server (with a token), a fixture server on another loopback port (ROTA_FIXTURE_URL: the
// cross-site page, and POST /start-worker to start a `rota worker` on demand), and checks
// the screenshots this writes to $ROTA_ARTIFACTS_DIR/dashboard/.
//
// Exits 0 when every check passed, 1 with a message naming the failed check otherwise.
import {
  ACTION_TIMEOUT_MS, LIVE_TIMEOUT_MS, CheckFailed, apiClient, check, expectVisible, fail,
  launchBrowser, loadConfig, log, pathOf, screenshot, step, textOf, waitForText, waitUntil,
} from './harness.mjs';

// The whole run must end well inside the Go test's own timeout.
const RUN_TIMEOUT_MS = 100_000;

const SCHEDULE = 'dashboard-nightly-report';

async function main() {
  const cfg = loadConfig();
  const api = apiClient(cfg);
  const browser = await launchBrowser(cfg);
  const page = await browser.context.newPage();
  const s = { cfg, api, context: browser.context, page };
  try {
    await step('seed: a delayed task and a schedule through the API', () => seed(s));
    await step('without a session: pages redirect to /login, actions get 403', () => withoutSession(s));
    await step('log in: a wrong token is refused, the right one opens the overview', () => logIn(s));
    await step('the session cookie is HttpOnly, SameSite=Strict and not the token', () => sessionCookie(s));
    await step('a cross-site form post is refused and changes nothing', () => crossSitePost(s));
    await step('a task goes from PENDING to SUCCEEDED live, without a reload', () => liveTask(s));
    await step('tasks page: list, filter and search by id', () => tasksPage(s));
    await step('a dead task is found in dead letters and replayed', () => replayDeadTask(s));
    await step('replay with empty filters asks first, with the count, then replays', () => replayAllWithConfirmation(s));
    await step('the task page tells the runs of a replayed task apart', () => attemptRuns(s));
    await step('the task list shows the last error; the Queues page lists the queues', () => lastErrorAndQueues(s));
    await step('a queue is limited with the Queues page form, paused and resumed', () => limitAndPauseQueue(s));
    await step('a schedule is paused and resumed', () => pauseAndResume(s));
    await step('workers: the Workers page and the unserved-queue warning', () => workersScenarios(s));
    await step('flows: the list, and a flow\'s graph turning SUCCEEDED step by step, live', () => flowScenario(s));
    await step('log out: the pages ask for the login again', () => logOut(s));
  } catch (err) {
    await page.screenshot({ path: `${cfg.screenshotDir}/failure.png`, fullPage: true }).catch(() => {});
    throw err;
  } finally {
    await browser.close();
  }
}

async function seed(s) {
  // Delayed an hour in a queue no worker serves: it stays PENDING and cancelable, the target
  // of the forged requests below.
  const victim = await s.api.call('POST', '/api/tasks',
    { kind: 'noop', queue: 'guarded', delay_seconds: 3600 }, 201);
  s.victimID = victim.id;
  log(`victim task ${victim.id} (PENDING in queue guarded)`);
  await s.api.call('POST', '/api/schedules', {
    name: SCHEDULE, cron_spec: '0 3 * * *', timezone: 'Europe/Berlin',
    task: { kind: 'noop', queue: 'reports' },
  }, 201);
  log(`schedule ${SCHEDULE}`);
}

async function withoutSession({ cfg, api, page, context, victimID }) {
  for (const p of ['/', '/tasks', '/schedules']) {
    const res = await page.goto(cfg.url + p);
    const where = pathOf(page);
    check(where.path === '/login', `GET ${p} without a session ended on ${page.url()} (status ${res?.status()}), want /login`);
    check(where.next === p || (p === '/' && where.next === null),
      `GET ${p} redirected to ${page.url()}, want next=${p}`);
    const hop = await res.request().redirectedFrom()?.response();
    check(hop?.status() === 303, `GET ${p} without a session answered ${hop?.status()}, want a 303 to /login`);
    log(`GET ${p} -> 303 ${page.url().slice(cfg.url.length)}`);
  }
  // Requests with no cookie at all (this context has not logged in yet), even carrying a
  // csrf field: refused before anything runs.
  const actions = [
    `/tasks/${victimID}/cancel`,
    `/tasks/${victimID}/replay`,
    '/dead-letters/replay',
    `/schedules/${SCHEDULE}/pause`,
  ];
  for (const action of actions) {
    const res = await context.request.post(cfg.url + action, {
      form: { csrf: 'forged', task_id: victimID }, maxRedirects: 0, failOnStatusCode: false,
    });
    check(res.status() === 403, `POST ${action} without a session answered ${res.status()}, want 403`);
    log(`POST ${action} -> 403`);
  }
  await expectUnchanged(api, victimID);
}

// expectUnchanged: the victim is still PENDING with no cancel requested, and the schedule
// still enabled: the refused requests changed nothing.
async function expectUnchanged(api, victimID) {
  const t = await api.task(victimID);
  check(t.status === 'PENDING' && t.cancel_requested_at === null,
    `victim task after refused requests: status ${t.status}, cancel_requested_at ${t.cancel_requested_at}; want PENDING and null`);
  const sch = await api.schedule(SCHEDULE);
  check(sch.enabled === true, `schedule ${SCHEDULE} after refused requests: enabled ${sch.enabled}, want true`);
  log('API: victim task still PENDING, schedule still enabled');
}

async function logIn({ cfg, page }) {
  await page.goto(`${cfg.url}/login`);
  await expectVisible(page, '#login-form', 'login page');
  const type = await page.getAttribute('#token', 'type');
  check(type === 'password', `#token has type ${type}, want password`);
  await screenshot(cfg, page, 'login');

  await page.fill('#token', 'not-the-token');
  const [refused] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === '/login' && r.request().method() === 'POST'),
    page.click('#login-submit'),
  ]);
  check(refused.status() === 401, `login with a wrong token answered ${refused.status()}, want 401`);
  await expectVisible(page, '.flash-error', 'login with a wrong token');
  log(`wrong token -> 401 with ${JSON.stringify(await textOf(page, '.flash-error'))}`);

  await page.fill('#token', cfg.token);
  await Promise.all([page.waitForURL(`${cfg.url}/`), page.click('#login-submit')]);
  await expectVisible(page, '#queue-counts', 'overview after login');
  log('right token -> overview');

  // The seeded task shows in its queue's row.
  await waitForText(page, '#queue-counts tr[data-queue="guarded"] td[data-status="PENDING"]', '1');
  await expectVisible(page, '#throughput-chart', 'overview');
  log(`failure rate ${JSON.stringify(await textOf(page, '#failure-rate'))}`);
  await screenshot(cfg, page, 'overview');
}

async function sessionCookie({ cfg, context }) {
  const cookie = (await context.cookies(cfg.url)).find((c) => c.name === 'rota_session');
  check(cookie, 'no rota_session cookie after login');
  check(cookie.httpOnly, 'rota_session is not HttpOnly');
  check(cookie.sameSite === 'Strict', `rota_session has SameSite=${cookie.sameSite}, want Strict`);
  check(cookie.path === '/', `rota_session has Path=${cookie.path}, want /`);
  check(!cookie.value.includes(cfg.token), 'rota_session carries the token itself');
  // Its value is no credential for the API.
  const res = await fetch(`${cfg.url}/api/stats`, { headers: { Authorization: `Bearer ${cookie.value}` } });
  check(res.status === 401, `the cookie's value as a Bearer token got ${res.status} from /api/stats, want 401`);
  log('cookie value as a Bearer token -> 401');
}

// crossSitePost submits, from a page on another origin (the fixture server), a form to
// the dashboard's cancel action, in the logged-in browser: once as a plain forgery and once
// even carrying the session's real csrf value, so the origin check alone is shown to hold.
// Both origins are 127.0.0.1, so the SameSite cookie is sent: the refusal is the
// dashboard's, not the browser's.
async function crossSitePost({ cfg, context, page, api, victimID }) {
  await page.goto(`${cfg.url}/tasks/${victimID}`);
  await waitForText(page, '#task-status', 'PENDING');
  const csrf = await page.getAttribute('#cancel-form input[name="csrf"]', 'value');
  check(csrf, '#cancel-form has no csrf value');
  const action = `${cfg.url}/tasks/${victimID}/cancel`;
  const evil = await context.newPage();
  try {
    for (const [label, token] of [['without csrf', ''], ['with the real csrf', csrf]]) {
      const target = `${cfg.fixtureURL}/cross-site?${new URLSearchParams({ action, csrf: token })}`;
      const [res] = await Promise.all([
        evil.waitForResponse((r) => r.url() === action && r.request().method() === 'POST'),
        evil.goto(target),
      ]);
      const headers = await res.request().allHeaders();
      check(res.status() === 403, `cross-site POST ${label} answered ${res.status()}, want 403`);
      check(headers.cookie?.includes('rota_session='),
        `cross-site POST ${label} carried no session cookie, so it does not test the origin check`);
      log(`cross-site POST ${label} (sec-fetch-site ${headers['sec-fetch-site']}) -> 403`);
    }
  } finally {
    await evil.close();
  }
  await expectUnchanged(api, victimID);
}

async function liveTask({ cfg, api, page }) {
  const task = await api.call('POST', '/api/tasks', { kind: 'sleep', payload: { ms: 1500 } }, 201);
  await page.goto(`${cfg.url}/tasks/${task.id}`);
  await waitForText(page, '#task-status', 'PENDING');
  log(`task ${task.id} reads PENDING, no worker running`);

  // A reload or a navigation would drop this marker; the observer records every status
  // the page shows on the way.
  await page.evaluate(() => {
    window.__rotaMarker = 'still the same page';
    window.__rotaStatuses = [];
    const record = () => {
      const v = document.querySelector('#task-status')?.textContent.trim();
      if (v && window.__rotaStatuses.at(-1) !== v) window.__rotaStatuses.push(v);
    };
    record();
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const before = page.url();

  const res = await fetch(`${cfg.fixtureURL}/start-worker`, { method: 'POST' });
  check(res.status === 204, `starting the worker: fixture answered ${res.status} ${await res.text()}`);
  log('worker started');

  await waitForText(page, '#task-status', 'SUCCEEDED', { timeout: LIVE_TIMEOUT_MS });
  const marker = await page.evaluate(() => window.__rotaMarker);
  check(marker === 'still the same page', 'the page was reloaded or navigated to show the new status');
  check(page.url() === before, `the page moved from ${before} to ${page.url()}`);
  log(`statuses shown live: ${(await page.evaluate(() => window.__rotaStatuses)).join(' -> ')}`);
  const fresh = await api.task(task.id);
  check(fresh.status === 'SUCCEEDED', `API says the task is ${fresh.status}, the page SUCCEEDED`);
  await waitUntil('the attempt to show in #attempts', async () =>
    (await page.locator('#attempts tr.attempt').count()) === 1, { timeout: ACTION_TIMEOUT_MS });
  log('one attempt row');
  // The same live update that changed the status: still no reload.
  check(await page.evaluate(() => window.__rotaMarker) === 'still the same page', 'the page was reloaded');
}

// flowScenario watches the page of the flow e2e/dashboard_test.go started (extract ->
// transform for_each over extract -> load, in a queue no worker serves) while this script
// works its tasks over the HTTP worker protocol: each step turns SUCCEEDED on the open
// page without a reload.
async function flowScenario({ cfg, api, page }) {
  const flowID = process.env.ROTA_FLOW_ID;
  const queue = process.env.ROTA_FLOW_QUEUE;
  check(flowID && queue, 'ROTA_FLOW_ID and ROTA_FLOW_QUEUE are not set');
  await Promise.all([page.waitForURL((u) => u.pathname === '/flows'), page.click('a[data-nav="flows"]')]);
  const row = `#flow-list tr[data-flow-id="${flowID}"]`;
  await waitForText(page, `${row} td.status`, 'RUNNING');
  await screenshot(cfg, page, 'flows');
  await Promise.all([page.waitForURL(`${cfg.url}/flows/${flowID}`), page.click(`${row} a.flow-link`)]);

  const node = (step) => `#flow-graph g.node[data-step="${step}"]`;
  await expectVisible(page, '#flow-graph', 'flow page');
  for (const [step, status] of [['extract', 'PENDING'], ['transform', 'WAITING'], ['load', 'WAITING']]) {
    await waitForText(page, `${node(step)} .node-status`, status);
  }
  const edges = await page.locator('#flow-graph path.edge').count();
  check(edges === 2, `the graph draws ${edges} edges, want 2`);
  log('graph: extract PENDING, transform and load WAITING, 2 edges');
  await page.evaluate(() => { window.__rotaMarker = 'still the same page'; });

  // work claims every due task of the queue over HTTP and completes each with output(task).
  const work = async (want, output) => {
    const { tasks } = await api.call('POST', `/api/queues/${queue}/claim`, { worker_id: 'browser-test', limit: 10 });
    check(tasks.length === want, `claimed ${tasks.length} tasks of ${queue}, want ${want}`);
    for (const t of tasks) {
      await api.call('POST', `/api/tasks/${t.id}/complete`, { lease_token: t.lease_token, output: output(t) });
    }
    return tasks;
  };
  await work(1, () => ['a', 'b', 'c']);
  await waitForText(page, `${node('extract')} .node-status`, 'SUCCEEDED', { timeout: LIVE_TIMEOUT_MS });
  await waitForText(page, `${node('transform')} .node-progress`, '0 of 3 succeeded', { timeout: LIVE_TIMEOUT_MS });
  log('extract turned SUCCEEDED live; transform shows 0 of 3');

  await work(3, (t) => `transformed ${t.id}`);
  await waitForText(page, `${node('transform')} .node-status`, 'SUCCEEDED', { timeout: LIVE_TIMEOUT_MS });
  await work(1, () => ({ loaded: true }));
  await waitForText(page, '#flow-status', 'SUCCEEDED', { timeout: LIVE_TIMEOUT_MS });
  await waitForText(page, `${node('load')} .node-status`, 'SUCCEEDED');
  check(await page.evaluate(() => window.__rotaMarker) === 'still the same page',
    'the flow page was reloaded or navigated to show the new statuses');
  log('every step and the flow turned SUCCEEDED on the open page');
  await screenshot(cfg, page, 'flow');

  // A node links to its step's task; that task's page links back to the flow.
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/tasks/')), page.click(`${node('load')} a`)]);
  await Promise.all([page.waitForURL(`${cfg.url}/flows/${flowID}`), page.click('#task-flow')]);
  log('load node -> its task -> back to the flow');
}

async function tasksPage({ cfg, api, page }) {
  const done = (await api.get('/api/tasks?status=SUCCEEDED&kind=sleep')).tasks;
  check(done.length === 1, `API lists ${done.length} SUCCEEDED sleep tasks, want 1`);
  const id = done[0].id;
  await page.click('a[data-nav="tasks"]');
  await page.waitForURL((u) => u.pathname === '/tasks');
  const row = `tr[data-task-id="${id}"]`;
  await waitForText(page, `${row} td.status`, 'SUCCEEDED');
  await waitForText(page, `${row} td.kind`, 'sleep');
  await screenshot(cfg, page, 'tasks');

  // Filter to PENDING: the sleep task goes, the delayed one stays.
  await page.selectOption('#task-filter select[name="status"]', 'PENDING');
  await Promise.all([page.waitForURL((u) => u.searchParams.get('status') === 'PENDING'),
    page.locator('#task-filter').evaluate((f) => f.requestSubmit())]);
  check(await page.locator(row).count() === 0, `the PENDING filter still lists SUCCEEDED task ${id}`);
  check(await page.locator('tr[data-task-id] td.status').count() > 0, 'the PENDING filter lists no task');
  for (const st of await page.locator('tr[data-task-id] td.status').allTextContents()) {
    check(st.trim() === 'PENDING', `the PENDING filter lists a ${st.trim()} task`);
  }
  log('status filter PENDING lists only PENDING tasks');

  await page.fill('#task-search input[name="id"]', id);
  await Promise.all([page.waitForURL(`${cfg.url}/tasks/${id}`),
    page.locator('#task-search').evaluate((f) => f.requestSubmit())]);
  await waitForText(page, '#task-status', 'SUCCEEDED');
  log('search by id opened the task');
}

async function replayDeadTask({ cfg, api, page }) {
  const task = await api.call('POST', '/api/tasks',
    { kind: 'fail', payload: { times: 100 }, max_attempts: 1 }, 201);
  await waitUntil(`task ${task.id} to be DEAD`, async () => (await api.task(task.id)).status === 'DEAD',
    { describe: async () => (await api.task(task.id)).status });
  log(`task ${task.id} is DEAD (API)`);

  await page.click('a[data-nav="dead-letters"]');
  await page.waitForURL((u) => u.pathname === '/dead-letters');
  const row = page.locator(`tr[data-task-id="${task.id}"]`).first();
  await row.waitFor({ state: 'visible' }).catch(() => fail(`task ${task.id} is not listed on /dead-letters`));
  log(`dead letter row: ${JSON.stringify((await row.innerText()).replace(/\s+/g, ' ').trim())}`);
  await screenshot(cfg, page, 'dead-letters');

  const link = row.locator(`a[href$="/tasks/${task.id}"]`).first();
  if (await link.count()) {
    await Promise.all([page.waitForURL(`${cfg.url}/tasks/${task.id}`), link.click()]);
  } else {
    log('the row has no link to the task: opening it by URL');
    await page.goto(`${cfg.url}/tasks/${task.id}`);
  }
  await waitForText(page, '#task-status', 'DEAD');
  const lastError = await textOf(page, '#task-last-error');
  check(lastError, '#task-last-error is empty for a dead task');
  log(`last error ${JSON.stringify(lastError)}`);

  await Promise.all([
    page.waitForURL(`${cfg.url}/tasks/${task.id}`, { waitUntil: 'load' }),
    page.waitForResponse((r) => r.url() === `${cfg.url}/tasks/${task.id}/replay` && r.status() === 303),
    page.click('#replay-task'),
  ]);
  await expectVisible(page, '.flash-ok', 'after replay');
  log(`flash ${JSON.stringify(await textOf(page, '.flash-ok'))}`);

  // The worker is still running and the task fails every time: it runs again and dies
  // again. The history says so: the first run, the replay, the second run.
  const outcomes = async () => (await api.attempts(task.id)).map((a) => a.outcome);
  const history = await waitUntil('the replayed task to run and die again', async () => {
    const o = await outcomes();
    const i = o.indexOf('REPLAYED');
    return i >= 0 && o.length > i + 1 && (await api.task(task.id)).status === 'DEAD' ? o : null;
  }, { describe: async () => `${(await api.task(task.id)).status}, attempts ${(await outcomes()).join(',')}` });
  log(`API attempts: ${history.join(', ')}`);

  // The page (not reloaded since the flash) catches up by itself.
  await waitForText(page, '#task-status', 'DEAD', { timeout: LIVE_TIMEOUT_MS });
  const historyRows = '#attempts tr.attempt, #attempts tr.replay-divider';
  await waitUntil(`#attempts to show ${history.length} rows`, async () =>
    (await page.locator(historyRows).count()) === history.length,
  { timeout: LIVE_TIMEOUT_MS, describe: async () => `${await page.locator(historyRows).count()} rows` });
  const rows = await page.locator(historyRows).allInnerTexts();
  check(rows.some((r) => /replayed/i.test(r)), `no attempt row shows the replay: ${JSON.stringify(rows)}`);
  log('the page shows the REPLAYED event and the second run');
  await screenshot(cfg, page, 'task');
}

// ---- Issue 15: the bulk replay's confirmation and the runs of a replayed task. ----

// deadOrFailedCount is how many tasks are DEAD or FAILED now, by the API.
async function deadOrFailedCount(api) {
  let n = 0;
  for (const status of ['DEAD', 'FAILED']) {
    for (let cursor = ''; ;) {
      const res = await api.get(`/api/tasks?status=${status}&limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      n += res.tasks.length;
      if (!res.next_cursor) break;
      cursor = encodeURIComponent(res.next_cursor);
    }
  }
  return n;
}

// replayAllWithConfirmation: "Replay matching" with every filter empty shows a page
// that asks, with the number of tasks it will replay, and changes nothing; its button
// replays them (the form, csrf field included, is the page's own: no script).
async function replayAllWithConfirmation({ cfg, api, page }) {
  const bulk = [];
  for (let i = 0; i < 2; i++) {
    bulk.push(await api.call('POST', '/api/tasks', { kind: 'fail', payload: { times: 100, bulk: true }, max_attempts: 1 }, 201));
  }
  for (const t of bulk) {
    await waitUntil(`bulk task ${t.id} to be DEAD`, async () => (await api.task(t.id)).status === 'DEAD',
      { describe: async () => (await api.task(t.id)).status });
  }
  const want = await deadOrFailedCount(api);
  check(want >= bulk.length, `the API counts ${want} DEAD or FAILED tasks, want at least ${bulk.length}`);
  log(`${want} DEAD or FAILED tasks (API)`);

  await page.goto(`${cfg.url}/dead-letters`);
  for (const field of ['queue', 'kind']) {
    check(await page.inputValue(`#replay-filtered input[name="${field}"]`) === '', `the replay form's ${field} is not empty`);
  }
  await Promise.all([
    page.waitForResponse((r) => r.url() === `${cfg.url}/dead-letters/replay` && r.request().method() === 'POST' && r.status() === 200),
    page.waitForEvent('load'),
    page.click('#replay-filtered button[type="submit"]'),
  ]);
  await expectVisible(page, '#replay-confirm', 'after Replay matching with empty filters');
  const count = await textOf(page, '#replay-count');
  check(count === want.toLocaleString('en-US'), `the confirmation says ${JSON.stringify(count)} tasks, the API counts ${want}`);
  log(`confirmation: ${JSON.stringify((await page.locator('#replay-confirm p').first().innerText()).trim())}`);
  for (const t of bulk) {
    const st = (await api.task(t.id)).status;
    check(st === 'DEAD', `task ${t.id} is ${st} before the replay was confirmed, want DEAD`);
  }
  log('nothing replayed before the confirmation');
  await screenshot(cfg, page, 'replay-confirm');

  await Promise.all([
    page.waitForResponse((r) => r.url() === `${cfg.url}/dead-letters/replay` && r.status() === 303),
    page.waitForURL((u) => u.pathname === '/dead-letters', { waitUntil: 'load' }),
    page.click('#replay-confirm-button'),
  ]);
  await expectVisible(page, '.flash-ok', 'after the confirmed replay');
  const flash = await textOf(page, '.flash-ok');
  check(flash.startsWith(`Replayed ${want} task`), `flash ${JSON.stringify(flash)}, want "Replayed ${want} tasks."`);
  log(`flash ${JSON.stringify(flash)}`);
  for (const t of bulk) {
    const outcomes = (await api.attempts(t.id)).map((a) => a.outcome);
    check(outcomes.includes('REPLAYED'), `task ${t.id} has no REPLAYED event after the confirmed replay: ${outcomes.join(',')}`);
  }
  log('every bulk task has its REPLAYED event (API)');
}

// attemptRuns: the task replayed twice (by its own page, then by the bulk replay) has
// three runs; the page divides them with the REPLAYED events and numbers each row's run.
async function attemptRuns({ cfg, api, page }) {
  const first = (await api.get('/api/tasks?kind=fail&limit=1000')).tasks.find((t) => !t.payload?.bulk);
  check(first, 'the first fail task is not listed');
  await waitUntil(`task ${first.id} to run a third time and die`, async () => {
    const o = (await api.attempts(first.id)).map((a) => a.outcome);
    return o.filter((x) => x === 'REPLAYED').length === 2 && o.at(-1) !== 'REPLAYED' &&
      (await api.task(first.id)).status === 'DEAD';
  }, { describe: async () => (await api.attempts(first.id)).map((a) => a.outcome).join(',') });

  await page.goto(`${cfg.url}/tasks/${first.id}`);
  await waitForText(page, '#task-status', 'DEAD');
  const dividers = await page.locator('#attempts tr.replay-divider').allInnerTexts();
  check(dividers.length === 2, `${dividers.length} replay dividers, want 2`);
  check(/run 2 starts/.test(dividers[0]) && /run 3 starts/.test(dividers[1]), `dividers ${JSON.stringify(dividers)}`);
  const runs = (await page.locator('#attempts tr.attempt td.run').allTextContents()).map((r) => r.trim());
  check(runs.join(',') === '1,2,3', `run column ${runs.join(',')}, want 1,2,3`);
  const note = await textOf(page, '#last-error-note');
  check(note === 'From attempt 1 of run 3.', `last error note ${JSON.stringify(note)}`);
  log(`runs ${runs.join(',')}; ${note}`);
  await screenshot(cfg, page, 'task-attempts-runs');
}

// lastErrorAndQueues: a dead task's row in the task list carries its last error (the
// whole text in the title); the Queues page, reached from the navigation, counts them.
async function lastErrorAndQueues({ cfg, api, page }) {
  const dead = (await api.get('/api/tasks?status=DEAD&kind=fail&limit=1')).tasks[0];
  check(dead?.last_error, 'the API lists no DEAD fail task with a last error');
  await page.goto(`${cfg.url}/tasks?status=DEAD`);
  const cell = page.locator(`tr[data-task-id="${dead.id}"] td.last-error span`);
  await cell.waitFor({ state: 'visible' }).catch(() => fail(`no last error shown for task ${dead.id} in /tasks`));
  const title = await cell.getAttribute('title');
  check(title === dead.last_error, `the last error's title is ${JSON.stringify(title)}, the API says ${JSON.stringify(dead.last_error)}`);
  log(`task list: last error ${JSON.stringify((await cell.innerText()).trim())}`);

  await Promise.all([page.waitForURL((u) => u.pathname === '/queues'), page.click('a[data-nav="queues"]')]);
  const row = 'tr[data-queue="default"]';
  await expectVisible(page, `#queue-list ${row}`, 'queues page');
  // The replayed tasks may still be running: wait for the page (live) and the API to agree.
  const deadOnPage = async () => Number(await textOf(page, `${row} td.dead`));
  const deadByAPI = async () => (await api.get('/api/tasks?status=DEAD,FAILED&queue=default&limit=1000')).tasks.length;
  const { deadCount } = await waitUntil('the Queues page and the API to agree on dead tasks in default', async () => {
    const [shown, listed] = [await deadOnPage(), await deadByAPI()];
    return shown === listed && (await deadByAPI()) === listed ? { deadCount: shown } : null;
  }, { describe: async () => `page ${await deadOnPage()}, API ${await deadByAPI()}` });
  check(deadCount >= 3, `the Queues page shows ${deadCount} dead or failed tasks in default, want the 3 fail tasks`);
  log(`queues: default has ${deadCount} dead or failed, ${await textOf(page, `${row} td.waiting`)} waiting`);
  await screenshot(cfg, page, 'queues');
}

// limitAndPauseQueue: the Queues page's form configures a queue that has no task yet,
// its row shows the limits, Pause and Resume change it, and the API agrees each time.
async function limitAndPauseQueue({ cfg, api, page }) {
  const queue = 'throttled';
  if (pathOf(page).path !== '/queues') {
    await Promise.all([page.waitForURL((u) => u.pathname === '/queues'), page.click('a[data-nav="queues"]')]);
  }
  await page.fill('#limits-queue', queue);
  await page.fill('#limits-concurrency', '5');
  await page.fill('#limits-rate', '100/1s');
  await page.fill('#limits-group-concurrency', '1');
  await clickAction(page, '#queue-limits-form button[type="submit"]');
  await expectVisible(page, '.flash-ok', 'after setting limits');
  const row = `tr[data-queue="${queue}"]`;
  const settings = async () => (await textOf(page, `${row} td.settings`)) ?? '';
  await waitUntil('the new queue listed with its limits', async () =>
    (await settings()) === 'concurrency 5, rate 100/1s, group concurrency 1', { describe: settings });
  let q = await api.get(`/api/queues/${queue}`);
  check(q.concurrency === 5 && q.rate?.limit === 100 && q.rate?.per_seconds === 1 && q.group_concurrency === 1,
    `the page set the limits, the API says ${JSON.stringify(q)}`);

  await clickAction(page, `${row} button.pause-queue`);
  await expectVisible(page, '.flash-ok', 'after pausing the queue');
  await waitUntil('the paused badge', async () => (await settings()).startsWith('paused '), { describe: settings });
  check((await api.get(`/api/queues/${queue}`)).paused === true, 'the page says paused, the API does not');
  log(`queue ${queue}: ${await settings()}`);
  await screenshot(cfg, page, 'queues-limited');

  await clickAction(page, `${row} button.resume-queue`);
  await expectVisible(page, '.flash-ok', 'after resuming the queue');
  q = await api.get(`/api/queues/${queue}`);
  check(q.paused === false && q.concurrency === 5, `after resume the API says ${JSON.stringify(q)}`);
  check(await page.locator(`${row} .badge-paused`).count() === 0, 'a resumed queue still shows the paused badge');
  log(`queue ${queue} resumed (page and API)`);
}

async function pauseAndResume({ cfg, api, page }) {
  await page.click('a[data-nav="schedules"]');
  await page.waitForURL((u) => u.pathname === '/schedules');
  const row = `tr[data-schedule="${SCHEDULE}"]`;
  await waitForText(page, `${row} td.enabled`, 'enabled');
  log(`cron ${await textOf(page, `${row} td.cron`)}, zone ${await textOf(page, `${row} td.timezone`)}, next ${await textOf(page, `${row} td.next-run`)}`);

  await clickAction(page, `${row} button.pause-schedule`);
  await expectVisible(page, '.flash-ok', 'after pause');
  await waitForText(page, `${row} td.enabled`, 'paused');
  check((await api.schedule(SCHEDULE)).enabled === false, 'the page says paused, the API says enabled');
  check(await page.locator(`${row} button.pause-schedule`).count() === 0, 'a paused schedule still offers pause');
  log('paused (page and API)');
  await screenshot(cfg, page, 'schedules');

  await clickAction(page, `${row} button.resume-schedule`);
  await expectVisible(page, '.flash-ok', 'after resume');
  await waitForText(page, `${row} td.enabled`, 'enabled');
  check((await api.schedule(SCHEDULE)).enabled === true, 'the page says enabled, the API says paused');
  log('resumed (page and API)');

  await Promise.all([page.waitForURL(`${cfg.url}/schedules/${SCHEDULE}`),
    page.click(`${row} a.schedule-link`)]);
  await expectVisible(page, '#reschedule-form', 'schedule page');
  await expectVisible(page, '#schedule-runs', 'schedule page');
  await screenshot(cfg, page, 'schedule');
}

// clickAction clicks a button that posts a form and waits for the page it lands on.
async function clickAction(page, selector) {
  const button = page.locator(selector);
  check(await button.count() === 1, `want one ${selector}, found ${await button.count()}`);
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.status() === 303),
    page.waitForEvent('load'),
    button.click(),
  ]);
}

async function logOut({ cfg, context, page }) {
  await Promise.all([page.waitForEvent('load'), page.click('#logout')]);
  const cookie = (await context.cookies(cfg.url)).find((c) => c.name === 'rota_session');
  check(!cookie?.value, 'rota_session is still set after logout');
  await page.goto(`${cfg.url}/tasks`);
  check(pathOf(page).path === '/login', `after logout /tasks ended on ${page.url()}, want /login`);
  log('logged out; /tasks redirects to /login');
}

// --- Workers registry (issue 15, DESIGN.md section 12) ------------------------------
// Runs once the worker of liveTask is live: the Workers page lists it as the API does,
// and a queue with a due task and no live worker is flagged on the overview (and its
// create answer carried a warning).
async function workersScenarios(s) {
  await unservedQueue(s);
  await workersPage(s);
}

async function unservedQueue({ cfg, api, page }) {
  const created = await api.call('POST', '/api/tasks', { kind: 'noop', queue: 'nobody-home' }, 201);
  check(created.warnings?.length === 1 && created.warnings[0].includes('queue "nobody-home" has no live worker'),
    `the create answer's warnings are ${JSON.stringify(created.warnings)}, want the no-live-worker warning`);
  log(`create answer warns: ${created.warnings[0]}`);
  await page.click('a[data-nav="overview"]');
  await page.waitForURL((u) => u.pathname === '/');
  await waitUntil('the overview to flag queue nobody-home', async () =>
    (await textOf(page, '#unserved-warning'))?.includes('nobody-home'), { timeout: ACTION_TIMEOUT_MS,
    describe: () => textOf(page, '#unserved-warning') });
  const cell = await textOf(page, 'tr[data-queue="nobody-home"] td.workers');
  check(cell?.includes('unserved'), `the nobody-home row's workers cell reads ${JSON.stringify(cell)}, want "unserved"`);
  const served = await textOf(page, 'tr[data-queue="default"] td.workers');
  check(Number(served) >= 1, `the default queue's workers cell reads ${JSON.stringify(served)}, want its live worker count`);
  check(!(await textOf(page, '#unserved-warning')).includes('default'), 'the served default queue is flagged as unserved');
  log(`overview: ${await textOf(page, '#unserved-warning')}`);
  await screenshot(cfg, page, 'unserved-queue');
}

async function workersPage({ cfg, api, page }) {
  const { workers } = await api.get('/api/workers');
  const worker = workers.find((w) => w.queues.includes('default'));
  check(worker, `GET /api/workers lists no worker of queue default: ${JSON.stringify(workers)}`);
  await page.click('a[data-nav="workers"]');
  await page.waitForURL((u) => u.pathname === '/workers');
  const row = `tr[data-worker="${worker.id}"]`;
  await expectVisible(page, row, `the row of worker ${worker.id}`);
  const cells = {};
  for (const c of ['host', 'mode', 'queues', 'kinds', 'running', 'version', 'last-seen']) {
    cells[c] = await textOf(page, `${row} td.${c}`);
  }
  check(cells.host.startsWith(worker.host) && cells.host.includes(`pid ${worker.pid}`), `host cell ${JSON.stringify(cells.host)}`);
  check(cells.mode === 'poll' && cells.queues === 'default', `mode ${cells.mode}, queues ${cells.queues}`);
  check(['noop', 'sleep', 'fail', 'http'].every((k) => cells.kinds.includes(k)), `kinds cell ${JSON.stringify(cells.kinds)}`);
  check(/^\d+ \/ \d+$/.test(cells.running) && cells.running.endsWith(`/ ${worker.concurrency}`), `running cell ${JSON.stringify(cells.running)}`);
  check(cells.version === worker.version && cells.version !== '', `version cell ${JSON.stringify(cells.version)}`);
  check(/ago|now/.test(cells['last-seen']), `last seen cell ${JSON.stringify(cells['last-seen'])}`);
  log(`workers page: ${worker.id} on ${cells.host}, ${cells.running} running, kinds ${cells.kinds}`);
  await screenshot(cfg, page, 'workers');
}

const watchdog = setTimeout(() => {
  console.error(`FAIL: the run took more than ${RUN_TIMEOUT_MS} ms`);
  process.exit(1);
}, RUN_TIMEOUT_MS);

main().then(() => {
  clearTimeout(watchdog);
  console.log('PASS: dashboard browser scenarios');
}, (err) => {
  clearTimeout(watchdog);
  const cause = err?.cause ? ` (cause: ${err.cause.message || err.cause})` : '';
  console.error(err instanceof CheckFailed ? `FAIL: ${err.message}` : `FAIL: unexpected error${cause}: ${err.stack || err}`);
  process.exitCode = 1;
});
