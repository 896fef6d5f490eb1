package archive

import (
	"testing"
	"time"
)

// Background work takes no turn while nobody waits; while a person does,
// each piece pauses first and at most one core fewer than the machine has
// run at once, and the person's own work takes none; ending an
// interactive mark twice counts once.
func TestTurns(t *testing.T) {
	a := &Archive{turns: newTurns()}
	ctx := t.Context()
	var free []func()
	for range 2 * cap(a.turns.slots) {
		free = append(free, a.Background(ctx)) // would block past cap if it took turns
	}
	for _, end := range free {
		end()
	}

	own, end := a.Interactive(ctx)
	began := time.Now()
	var held []func()
	for range cap(a.turns.slots) {
		held = append(held, a.Background(ctx))
	}
	if took := time.Since(began); took < time.Duration(len(held))*turnPause {
		t.Errorf("%d turns taken in %v, want each after a pause of %v", len(held), took, turnPause)
	}
	got := make(chan func())
	go func() { got <- a.Background(ctx) }()
	select {
	case <-got:
		t.Fatalf("a turn past the %d cores' worth was given while a person waits", cap(a.turns.slots))
	case <-time.After(50 * time.Millisecond):
	}
	for range 2 * cap(a.turns.slots) {
		a.Background(own)() // would block if it took turns
	}
	held[0]()
	select {
	case e := <-got:
		e()
	case <-time.After(5 * time.Second):
		t.Fatal("a turn given back did not go to the work waiting for one")
	}
	for _, e := range held[1:] {
		e()
	}

	end()
	end()
	if n := a.turns.waiting.Load(); n != 0 {
		t.Fatalf("%d interactive marks after the only one ended twice, want 0", n)
	}
}

// A later mark counts from begin to end only: not before begin, once for
// a begin called twice, and not at all when begun after its end; its
// context takes no turns from the start.
func TestInteractiveLater(t *testing.T) {
	a := &Archive{turns: newTurns()}
	ctx, begin, end := a.InteractiveLater(t.Context())
	if n := a.InteractiveNow(); n != 0 {
		t.Fatalf("%d marks before begin, want 0", n)
	}
	for range 2 * cap(a.turns.slots) {
		a.Background(ctx)() // would block if it took turns
	}
	begin()
	begin()
	if n := a.InteractiveNow(); n != 1 {
		t.Fatalf("%d marks after begin twice, want 1", n)
	}
	end()
	end()
	if n := a.InteractiveNow(); n != 0 {
		t.Fatalf("%d marks after end, want 0", n)
	}
	_, begin, end = a.InteractiveLater(t.Context())
	end()
	begin()
	if n := a.InteractiveNow(); n != 0 {
		t.Fatalf("%d marks after a begin that came after its end, want 0", n)
	}
}
