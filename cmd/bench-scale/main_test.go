package main

import (
	"slices"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes(" 25 50,100  200")
	if err != nil || !slices.Equal(got, []int{25, 50, 100, 200}) {
		t.Errorf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "25 x", "1", "-4"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}
