package slack

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// headerToken is the plugin's HTTP transport: slack-go sends the bot token
// of form-encoded Web API calls as a "token" field of the body; this moves
// it into the Authorization header (which Slack accepts for every method),
// because the proxy puts kept secrets into credential headers only — never
// into bodies, where any field of any request could carry them out.
type headerToken struct{ next http.RoundTripper }

func (h headerToken) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return h.next.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(b))
	if err == nil && form.Has("token") {
		tok := form.Get("token")
		form.Del("token")
		b = []byte(form.Encode())
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return h.next.RoundTrip(r)
}
