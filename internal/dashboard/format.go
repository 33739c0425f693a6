package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rotaqueue/rota/internal/store"
)

// templateFuncs are the helpers the templates use. Times are shown as ages relative to
// the page's Now, with the exact RFC 3339 UTC time in the title attribute.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"at":           at,
		"since":        since,
		"statusClass":  statusClass,
		"prettyJSON":   prettyJSON,
		"truncate":     truncate,
		"oneLine":      oneLine,
		"count":        formatCount,
		"statuses":     func() []store.Status { return store.AllStatuses },
		"flowStatuses": func() []store.FlowStatus { return store.AllFlowStatuses },
		"pathEscape":   url.PathEscape,
		"list":         func(v ...any) []any { return v },
		// held: a buffer_one schedule run waiting for the running one (never due).
		"held": func(t time.Time) bool { return t.Equal(store.HeldRunAt) },
	}
}

// timeView is one time as the templates show it.
type timeView struct {
	Set bool
	UTC string // RFC 3339, UTC, for title and datetime attributes
	Rel string // "3s ago", "in 5m"
}

// at describes t (a time.Time or *time.Time; nil and zero are "not set") relative to now.
func at(now time.Time, t any) timeView {
	var tm time.Time
	switch v := t.(type) {
	case time.Time:
		tm = v
	case *time.Time:
		if v != nil {
			tm = *v
		}
	}
	if tm.IsZero() {
		return timeView{}
	}
	d := now.Sub(tm)
	rel := "now"
	switch {
	case d >= time.Second:
		rel = shortDuration(d) + " ago"
	case d <= -time.Second:
		rel = "in " + shortDuration(-d)
	}
	return timeView{Set: true, UTC: tm.UTC().Format(time.RFC3339), Rel: rel}
}

// since is the age of t at now without "ago" ("3s"), or "" when t is nil.
func since(now time.Time, t *time.Time) string {
	if t == nil {
		return ""
	}
	return shortDuration(max(now.Sub(*t), 0))
}

// shortDuration keeps the two largest units: 45s, 3m 20s, 2h 5m, 3d 4h.
func shortDuration(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return twoUnits(s/60, "m", s%60, "s")
	case s < 86400:
		return twoUnits(s/3600, "h", s%3600/60, "m")
	}
	return twoUnits(s/86400, "d", s%86400/3600, "h")
}

func twoUnits(a int64, au string, b int64, bu string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, au)
	}
	return fmt.Sprintf("%d%s %d%s", a, au, b, bu)
}

// statusClass is the CSS class of a status badge.
func statusClass(s any) string {
	return "badge badge-" + strings.ToLower(fmt.Sprint(s))
}

// prettyJSON indents a payload for reading; what is not JSON is shown as it is.
func prettyJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// truncate cuts s to at most n bytes on a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// oneLine joins the lines of s with single spaces: a multi-line error (a stack trace)
// fits one table cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// formatCount writes n with thin separators: 1 234 567.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pager is the links of a cursor-paged list, which the template "pager" shows: NextURL is
// "" on the last page, FirstURL on the first.
type pager struct {
	NextURL  string
	FirstURL string
}

// pageLinks makes the links of the page at cursor whose next page is at next: link is the
// list's URL at a cursor ("" for the first page).
func pageLinks(link func(cursor string) string, cursor, next string) pager {
	var p pager
	if next != "" {
		p.NextURL = link(next)
	}
	if cursor != "" {
		p.FirstURL = link("")
	}
	return p
}

// queryString is "?" and the non-empty params, encoded (sorted by name), or "" when
// every param is empty: the links of filtered, paged lists.
func queryString(params map[string]string) string {
	q := url.Values{}
	for k, v := range params {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
