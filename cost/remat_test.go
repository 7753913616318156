package cost

import "testing"

// TestMaxTextRemat: MaxText runs remat none as custom with NamedNone's
// places (it has no policy that keeps every activation) and every other
// policy as it is, custom places included.
func TestMaxTextRemat(t *testing.T) {
	if r, p := MaxTextRemat(RematNone, Places{}); r != RematCustom || p != NamedNone() {
		t.Errorf("MaxTextRemat(none) = %s %s, want custom %s", r, p, NamedNone())
	}
	var mine Places
	mine[LayerInput] = Offload
	if r, p := MaxTextRemat(RematCustom, mine); r != RematCustom || p != mine {
		t.Errorf("MaxTextRemat(custom %s) = %s %s, want it unchanged", mine, r, p)
	}
	if r, _ := MaxTextRemat(RematMinimal, Places{}); r != RematMinimal {
		t.Errorf("MaxTextRemat(minimal) = %s, want minimal", r)
	}
}
