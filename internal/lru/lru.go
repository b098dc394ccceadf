// Package lru is a map bounded to a number of entries, which forgets the
// least recently used one to make room: for caches whose keys come from
// records (schema ids), which must not grow with what the records carry.
package lru

import "container/list"

// Cache holds at most its capacity of entries. The zero value is not
// usable: make one with New. It is not safe for concurrent use.
type Cache[K comparable, V any] struct {
	max   int
	order *list.List // of *item, the most recently used first
	items map[K]*list.Element
}

type item[K comparable, V any] struct {
	key K
	val V
}

// New returns a cache of at most capacity entries (at least 1).
func New[K comparable, V any](capacity int) *Cache[K, V] {
	return &Cache[K, V]{max: max(capacity, 1), order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*item[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Put sets the value of key and marks it used; when that takes the cache
// past its capacity, the least recently used entry goes, and Put returns
// its value (evicted true).
func (c *Cache[K, V]) Put(key K, val V) (old V, evicted bool) {
	if el, ok := c.items[key]; ok {
		el.Value.(*item[K, V]).val = val
		c.order.MoveToFront(el)
		return old, false
	}
	c.items[key] = c.order.PushFront(&item[K, V]{key, val})
	if c.order.Len() <= c.max {
		return old, false
	}
	oldest := c.order.Back()
	c.order.Remove(oldest)
	it := oldest.Value.(*item[K, V])
	delete(c.items, it.key)
	return it.val, true
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int { return c.order.Len() }
