package gitstate

import (
	"encoding/json"
	"time"
)

func clockTime() time.Time { return time.Unix(1800000000+clock.Add(1), 0) }

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
