package msclient

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- { // reversed on purpose: Percentile must sort a copy
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	cases := map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond,
		100: 100 * time.Millisecond, 0.5: time.Millisecond}
	for q, want := range cases {
		if got := Percentile(samples, q); got != want {
			t.Errorf("p%v = %v, want %v", q, got, want)
		}
	}
	if samples[0] != 100*time.Millisecond {
		t.Errorf("input was reordered")
	}
	if Percentile(nil, 50) != 0 {
		t.Errorf("empty input must give 0")
	}
}
