package client

// queue is a FIFO backed by a slice: pushes append, pops advance a head
// index, and the dead prefix is reclaimed once it is at least half of the
// slice. The zero value is an empty queue.
type queue[T any] struct {
	items []T
	head  int
}

// len returns the number of queued items.
func (q *queue[T]) len() int { return len(q.items) - q.head }

// push appends v at the back.
func (q *queue[T]) push(v T) {
	if q.head > 0 && q.head >= len(q.items)/2 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, v)
}

// front returns the oldest item.
func (q *queue[T]) front() (T, bool) {
	if q.len() == 0 {
		var zero T
		return zero, false
	}
	return q.items[q.head], true
}

// pop removes and returns the oldest item.
func (q *queue[T]) pop() (T, bool) {
	var zero T
	if q.len() == 0 {
		return zero, false
	}
	v := q.items[q.head]
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	}
	return v, true
}

// at returns the i-th oldest item.
func (q *queue[T]) at(i int) T { return q.items[q.head+i] }

// removeAt removes the i-th oldest item.
func (q *queue[T]) removeAt(i int) {
	j := q.head + i
	copy(q.items[j:], q.items[j+1:])
	var zero T
	q.items[len(q.items)-1] = zero
	q.items = q.items[:len(q.items)-1]
}

// filter keeps the items for which keep returns true, in order.
func (q *queue[T]) filter(keep func(T) bool) {
	out := q.items[:0]
	for _, v := range q.items[q.head:] {
		if keep(v) {
			out = append(out, v)
		}
	}
	clear(q.items[len(out):])
	q.items = out
	q.head = 0
}

// reset empties the queue.
func (q *queue[T]) reset() {
	clear(q.items)
	q.items = q.items[:0]
	q.head = 0
}
