// Package dashboard is Rota's web UI: the overview (counts per queue and status, the
// oldest pending task, stuck tasks, an hour of throughput), tasks with their attempts,
// dead letters and schedules, and the operator's actions on them (cancel, replay one or
// many, pause, resume, trigger, reschedule). `rota serve` and `rota dev` serve it on the
// API's listener at every path outside /api, /healthz, /readyz and /metrics.
//
// # Server-rendered
//
// Every page is HTML rendered by html/template from templates/ (layout.html around
// <main id="content">, shared.html, one file per page) with data read through the
// store.Store interface, so it works the same on PostgreSQL and the memory store. The
// one stylesheet and one script are embedded (static/) and served under /assets/ with a
// content hash in the link, so a browser caches them until the binary changes. The
// throughput chart is inline SVG drawn on the server (chart.go); there is no client-side
// framework or chart library. Actions are plain HTML forms that POST and answer 303
// back to the page they came from, with the outcome in a one-time flash message (a
// short-lived cookie signed by the server). Input that cannot be right (a malformed id,
// status, cursor or time) gets a 400 page and changes nothing; what the store refuses
// (an illegal transition, an unknown task) comes back as an error flash.
//
// # What an operator is told before and after
//
// The task list shows each task's last error, cut to one short line with the whole text
// in its title. The column keeps the error of the latest failed attempt even after a
// later one succeeds, so a SUCCEEDED task's error is labelled as an earlier attempt's,
// with the attempt (and run) it came from. A replay resets the attempt count, so the
// task page numbers runs: run 1 until the first REPLAYED row of the history, and each
// such row, drawn as a divider, starts the next.
//
// "Replay matching" with no queue, kind or reason would replay every dead task there
// is. Such a POST without confirm=all changes nothing: it answers a page (replay_confirm)
// with the number of DEAD and FAILED tasks it would move (Store.CountReplayable, capped:
// "more than 10,000") and a form of its own carrying confirm=all and the csrf field. A
// page, not a script dialog: it works without JavaScript, and the server refuses what
// skipped it.
//
// The Queues page (/queues) lists every queue from the same cached Stats as the
// overview: what waits, how old the oldest due task is, what runs, is stuck or is dead.
//
// # Flows
//
// /flows lists flows (filters status and name, cursor paging); /flows/{id} draws the
// flow's DAG as inline SVG made on the server (flowgraph.go: a layered layout, a column
// per depth, rows in barycenter order, an edge per dependency, dashed for the one a
// for_each step fans out over), each node with its step's name, kind and status (a CSS
// class per status for the colour, the status also in words and in the node's title
// and aria-label), a for_each node with "n of m succeeded" from FlowStep.TaskStatuses,
// and a link to its task (a for_each node to its row in the step table, which links the
// first 20 tasks). The graph sits in a [data-live] region, so a step turning SUCCEEDED
// shows without a reload. Cancel (RUNNING) and Replay (FAILED, CANCELED) are forms like
// the task actions; a store refusal (ErrIllegalTransition, ErrConflict while a task of
// a failed flow still runs) comes back as an error flash. A step task's page links to
// its flow; a schedule of kind flow shows its flow and its Trigger starts one.
//
// # Live updates by partial swaps
//
// static/live.js polls the page's own URL every PollInterval with the header
// X-Rota-Partial: 1. For such requests the server renders only the inside of #content;
// the script replaces each [data-live] region with its fresh copy and leaves the rest
// alone (flash messages, filter and reschedule forms). It skips a round while a form
// field has focus, text is selected or the tab is hidden, so nothing the user is doing
// is swapped away. The cost of many open overviews is bounded: live fetches share one
// Stats query at a time (stats.go), and the chart counts only the minutes it has
// not kept yet.
//
// # Authentication and CSRF
//
// Without Config.Token there is no login. With it, GET /login shows a form for the API
// token; the right token sets the rota_session cookie (HttpOnly, SameSite=Strict, Path=/,
// Secure over TLS) whose value is "<issued>.<HMAC-SHA256>" under a key derived from the
// token: not the token itself, so the cookie is useless as a Bearer token, and any server
// with the same token accepts it (no session store). It expires after SessionTTL.
// Programs may send the token as "Authorization: Bearer <token>" instead, as to the
// API (a wrong one is 401 and counts toward the shared wrong-token limiter of
// internal/authlimit). Without a valid cookie or Bearer token every page GET answers
// 303 to /login?next=<path> and every other request 403, before any handler runs;
// /login and /assets/ are public.
//
// Every mutating request is a POST and passes two independent checks before its
// handler runs: net/http's CrossOriginProtection (Sec-Fetch-Site, or Origin against
// Host; through internal/browserguard, which the API shares), which refuses cross-site
// browser requests with 403, and a hidden csrf field equal to an HMAC of the session
// cookie (compared in constant time), which a page on another site cannot read. A
// request with the Bearer token needs no csrf field: browsers never send that header on
// their own. Without a token the csrf field is an HMAC under a key drawn at random when
// the process starts, so the second check holds too (and a form from before a restart
// must be reloaded). Every answer carries a Content-Security-Policy that allows only the
// dashboard's own script and stylesheet (no inline script or style), X-Frame-Options:
// DENY, and Cache-Control: no-store except for the assets.
//
// Without a token, every request whose Host is a DNS name other than localhost gets 403
// (browserguard): a DNS-rebinding page is same-origin to the browser, so neither check
// above would stop it from reading pages or posting forms with a csrf field it read.
package dashboard
