package lru

import "testing"

func TestCache(t *testing.T) {
	c := New[int, string](2)
	c.Put(1, "a")
	c.Put(2, "b")
	if v, ok := c.Get(1); !ok || v != "a" { // 1 is now the most recent
		t.Fatalf("Get(1) = %q, %v", v, ok)
	}
	if old, evicted := c.Put(3, "c"); !evicted || old != "b" { // 2 goes
		t.Fatalf("Put(3) evicted %q, %v", old, evicted)
	}
	if _, ok := c.Get(2); ok || c.Len() != 2 {
		t.Fatalf("2 kept, or %d entries", c.Len())
	}
	c.Put(1, "A")
	if v, _ := c.Get(1); v != "A" {
		t.Fatalf("Get(1) after Put = %q", v)
	}
	for i := range 1000 {
		c.Put(i+10, "x")
	}
	if c.Len() != 2 {
		t.Fatalf("%d entries, capacity 2", c.Len())
	}
}
