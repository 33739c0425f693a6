package memory

// fairReady holds the due tasks of one claim index, by group_key (ungrouped tasks are the
// group ""), and serves them in turns (DESIGN.md section 11, fairness): the group whose
// head has the highest priority first, and among those the group served longest ago
// (round robin, the turn carrying over from one claim to the next), then by its head's
// place in claim order. Picking the next task costs O(log groups + log tasks of the
// group): no claim walks a group's backlog. A queue whose tasks carry no group key has
// one group and pays two pushes on a heap of one for the turns.
//
// Lazy removal, as in the rest of the indexes: a group's items may be stale (the caller's
// valid rejects them when they surface), and turns of a group whose head or turn changed
// stay in order until they surface (their version no longer matches).
type fairReady struct {
	groups map[string]*readyGroup
	order  minHeap[groupTurn]
	turn   uint64 // how many times a group was served
	n      int    // items in all groups, stale ones included
	// stale says order was not kept while there was one group (the common queue without
	// group keys skips the turns): rebuild it when a second group arrives.
	stale bool
	// blocked is the one group, set aside for the rest of a claim (setAside).
	blocked *readyGroup
}

// readyGroup is one group's due tasks in claim order.
type readyGroup struct {
	key     string
	items   minHeap[claimItem]
	served  uint64 // the turn it was last served in, or the turn it arrived in
	version uint64 // of the groupTurn that stands for it in order
}

// groupTurn is a group's place in the serving order, valid while its version is the
// group's.
type groupTurn struct {
	g        *readyGroup
	version  uint64
	priority int    // of the group's head
	served   uint64 // the group's last turn
	head     claimItem
}

func turnOrder(a, b groupTurn) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.served != b.served {
		return a.served < b.served
	}
	return claimOrder(a.head, b.head)
}

func newFairReady() fairReady {
	return fairReady{groups: map[string]*readyGroup{}, order: minHeap[groupTurn]{less: turnOrder}}
}

// Len counts the items held, stale ones included.
func (f *fairReady) Len() int { return f.n }

// push adds a due task. A group that was empty joins behind every group already waiting
// (it takes the current turn as its last).
func (f *fairReady) push(it claimItem) {
	key := it.e.task.GroupKey
	g := f.groups[key]
	if g == nil {
		if f.stale {
			f.rebuild()
		}
		g = &readyGroup{key: key, items: minHeap[claimItem]{less: claimOrder}, served: f.turn}
		f.groups[key] = g
	}
	newHead := g.items.Len() == 0 || claimOrder(it, g.items.Peek())
	g.items.Push(it)
	f.n++
	if newHead {
		f.enter(g)
	}
}

// enter puts g into the serving order under its current head (its older turns go stale).
func (f *fairReady) enter(g *readyGroup) {
	g.version++
	head := g.items.Peek()
	f.order.Push(groupTurn{g: g, version: g.version, priority: head.priority, served: g.served, head: head})
	if n := f.order.Len(); n > 64 && n > 2*len(f.groups) {
		f.order.Filter(func(gt groupTurn) bool { return f.current(gt) })
	}
}

func (f *fairReady) current(gt groupTurn) bool {
	return gt.version == gt.g.version && f.groups[gt.g.key] == gt.g
}

// front returns the group to serve next and its head, dropping what valid rejects on the
// way; false when no valid item is left.
func (f *fairReady) front(valid func(claimItem) bool) (*readyGroup, claimItem, bool) {
	if len(f.groups) == 1 { // no turns to take: serve the one group
		for _, g := range f.groups {
			for g.items.Len() > 0 && !valid(g.items.Peek()) {
				g.items.Pop()
				f.n--
			}
			if g.items.Len() == 0 {
				f.drop(g)
				f.order.items = f.order.items[:0]
				f.stale = false
				return nil, claimItem{}, false
			}
			if g == f.blocked {
				return nil, claimItem{}, false
			}
			return g, g.items.Peek(), true
		}
	}
	for f.order.Len() > 0 {
		gt := f.order.Peek()
		g := gt.g
		if !f.current(gt) {
			f.order.Pop()
			continue
		}
		for g.items.Len() > 0 && !valid(g.items.Peek()) {
			g.items.Pop()
			f.n--
		}
		if g.items.Len() == 0 {
			f.order.Pop()
			f.drop(g)
			continue
		}
		if head := g.items.Peek(); head.e != gt.head.e || head.seq != gt.head.seq {
			f.order.Pop()
			f.enter(g) // its head changed: re-place it
			continue
		}
		return g, g.items.Peek(), true
	}
	return nil, claimItem{}, false
}

func (f *fairReady) drop(g *readyGroup) {
	g.version++
	delete(f.groups, g.key)
}

// take removes the head of g (which front returned) and sends g to the back of the turns.
func (f *fairReady) take(g *readyGroup) claimItem {
	it := g.items.Pop()
	f.n--
	f.turn++
	g.served = f.turn
	if len(f.groups) == 1 {
		if g.items.Len() == 0 {
			f.drop(g)
			f.order.items = f.order.items[:0]
			f.stale = false
		} else {
			f.stale = true
		}
		return it
	}
	if f.order.Len() > 0 && f.order.Peek().g == g {
		f.order.Pop()
	}
	if g.items.Len() == 0 {
		f.drop(g)
	} else {
		f.enter(g)
	}
	return it
}

// setAside takes the front group (which front returned) out of the turns for the rest
// of a claim that may not serve it (a group limit); restore puts it back in its place.
func (f *fairReady) setAside(g *readyGroup) groupTurn {
	if len(f.groups) == 1 { // served without turns: just hide it
		f.blocked = g
		return groupTurn{}
	}
	return f.order.Pop()
}

func (f *fairReady) restore(aside []groupTurn) {
	f.blocked = nil
	for _, gt := range aside {
		if gt.g != nil {
			f.order.Push(gt)
		}
	}
}

// filter drops every item keep rejects and rebuilds the turns (compaction).
func (f *fairReady) filter(keep func(claimItem) bool) {
	f.n = 0
	for _, g := range f.groups {
		g.items.Filter(keep)
		if g.items.Len() == 0 {
			f.drop(g)
			continue
		}
		f.n += g.items.Len()
	}
	f.rebuild()
}

// rebuild puts every group back into the turns under its current head.
func (f *fairReady) rebuild() {
	f.stale = false
	f.order.items = f.order.items[:0]
	for _, g := range f.groups {
		if g.items.Len() == 0 {
			continue
		}
		g.version++
		head := g.items.Peek()
		f.order.items = append(f.order.items, groupTurn{g: g, version: g.version, priority: head.priority, served: g.served, head: head})
	}
	f.order.Filter(func(groupTurn) bool { return true }) // restores the heap order
}

// each calls fn for every item held (stale ones included).
func (f *fairReady) each(fn func(claimItem)) {
	for _, g := range f.groups {
		for _, it := range g.items.items {
			fn(it)
		}
	}
}
