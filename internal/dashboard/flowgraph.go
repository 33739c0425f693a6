package dashboard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rotaqueue/rota/internal/store"
)

// A flow's graph is drawn on the server as inline SVG, as the throughput chart is: a
// layered layout with no script and no graph library. Each step sits in the column of
// its depth (the longest chain of dependencies before it), so every edge points right;
// within a column steps are ordered by the mean row of their dependencies (one pass of
// the barycenter heuristic, ties in create order), which keeps most edges short and
// uncrossed for the shapes flows have (chains, fan-out/fan-in, diamonds). The colours
// come from app.css classes per status (the CSP allows no inline style); every node
// also says its status in words and links to its task(s).

// Graph geometry in SVG user units.
const (
	graphNodeW  = 200
	graphNodeH  = 64
	graphColGap = 64 // between columns: room for the edges
	graphRowGap = 24
	graphMargin = 12
	graphNameN  = 24 // characters of a step name shown in its node (the title has all)
)

type flowGraph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

type graphNode struct {
	Name     string
	Label    string // the name, cut to fit
	Kind     string
	Status   store.StepStatus
	Class    string // the status's CSS class (node-succeeded, ...)
	Href     string // the step's task, its first task (for_each: the step's row below) or ""
	X, Y     int
	W, H     int
	Progress string // for_each: "3 of 10 succeeded"; "" otherwise
	Title    string // the hover text and accessible name: name, kind, status, progress
}

type graphEdge struct {
	From, To string
	D        string // the path
	ForEach  bool   // the dependency the step fans out over (drawn dashed)
}

// newFlowGraph lays out steps (in create order, acyclic, dependencies naming steps of
// the flow: what the store guarantees).
func newFlowGraph(steps []store.FlowStep) flowGraph {
	index := make(map[string]int, len(steps))
	for i, st := range steps {
		index[st.Name] = i
	}
	depth := stepDepths(steps, index)
	cols := 0
	for _, d := range depth {
		cols = max(cols, d+1)
	}
	// Columns, each in barycenter order of the rows the dependencies got.
	row := make([]float64, len(steps))
	columns := make([][]int, cols)
	for i := range steps {
		columns[depth[i]] = append(columns[depth[i]], i)
	}
	rows := 0
	for _, col := range columns {
		weight := func(i int) float64 {
			deps := steps[i].DependsOn
			if len(deps) == 0 {
				return float64(i) // roots keep create order
			}
			var sum float64
			for _, d := range deps {
				sum += row[index[d]]
			}
			return sum / float64(len(deps))
		}
		slices.SortStableFunc(col, func(a, b int) int {
			wa, wb := weight(a), weight(b)
			switch {
			case wa < wb:
				return -1
			case wa > wb:
				return 1
			}
			return 0
		})
		for r, i := range col {
			row[i] = float64(r)
		}
		rows = max(rows, len(col))
	}
	g := flowGraph{
		Width:  2*graphMargin + cols*graphNodeW + max(cols-1, 0)*graphColGap,
		Height: 2*graphMargin + rows*graphNodeH + max(rows-1, 0)*graphRowGap,
	}
	// A column shorter than the tallest is centred, so a fan-in sits between its sources.
	pos := make([][2]int, len(steps))
	for c, col := range columns {
		offset := (rows - len(col)) * (graphNodeH + graphRowGap) / 2
		for r, i := range col {
			pos[i] = [2]int{graphMargin + c*(graphNodeW+graphColGap), graphMargin + offset + r*(graphNodeH+graphRowGap)}
		}
	}
	for i, st := range steps {
		g.Nodes = append(g.Nodes, newGraphNode(st, pos[i][0], pos[i][1]))
		for _, d := range st.DependsOn {
			from := pos[index[d]]
			g.Edges = append(g.Edges, graphEdge{From: d, To: st.Name, ForEach: d == st.ForEach,
				D: edgePath(from[0]+graphNodeW, from[1]+graphNodeH/2, pos[i][0], pos[i][1]+graphNodeH/2)})
		}
	}
	return g
}

// stepDepths is each step's column: 0 without dependencies, else one more than its
// deepest dependency.
func stepDepths(steps []store.FlowStep, index map[string]int) []int {
	depth := make([]int, len(steps))
	done := make([]bool, len(steps))
	var visit func(i int) int
	visit = func(i int) int {
		if done[i] {
			return depth[i]
		}
		done[i] = true // acyclic: no step is reached again while on the path
		d := 0
		for _, dep := range steps[i].DependsOn {
			if j, ok := index[dep]; ok {
				d = max(d, visit(j)+1)
			}
		}
		depth[i] = d
		return d
	}
	for i := range steps {
		visit(i)
	}
	return depth
}

// edgePath is a horizontal S-curve from (x1, y1) to just before (x2, y2), where the
// arrow head (the marker) ends.
func edgePath(x1, y1, x2, y2 int) string {
	x2 -= 6 // the marker's length
	mid := (x1 + x2) / 2
	return fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, mid, y1, mid, y2, x2, y2)
}

func newGraphNode(st store.FlowStep, x, y int) graphNode {
	n := graphNode{Name: st.Name, Label: truncate(st.Name, graphNameN), Kind: truncate(st.Kind, graphNameN+4),
		Status: st.Status, Class: "node-" + strings.ToLower(string(st.Status)),
		X: x, Y: y, W: graphNodeW, H: graphNodeH}
	switch {
	case st.ForEach != "":
		n.Progress = forEachProgress(st)
		n.Href = "#step-" + st.Name
	case len(st.TaskIDs) == 1:
		n.Href = "/tasks/" + st.TaskIDs[0].String()
	}
	n.Title = fmt.Sprintf("Step %s (kind %s): %s", st.Name, st.Kind, st.Status)
	if n.Progress != "" {
		n.Title += ", " + n.Progress
	}
	return n
}

// forEachProgress says how far a for_each step's tasks are: "3 of 10 succeeded", with
// the running and failed ones when there are any; "waiting" before its tasks exist.
func forEachProgress(st store.FlowStep) string {
	if st.State == store.StepStateWaiting {
		return "over " + st.ForEach + ": waiting"
	}
	var ok, running, failed int
	for _, s := range st.TaskStatuses {
		switch s {
		case store.StatusSucceeded:
			ok++
		case store.StatusProcessing:
			running++
		case store.StatusFailed, store.StatusDead, store.StatusCanceled:
			failed++
		}
	}
	p := fmt.Sprintf("%d of %d succeeded", ok, len(st.TaskIDs))
	if running > 0 {
		p += fmt.Sprintf(", %d running", running)
	}
	if failed > 0 {
		p += fmt.Sprintf(", %d ended badly", failed)
	}
	return p
}
