package daemon

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// TestAppSettingsShowsTransports: Settings → Transports lists the chat
// cockpits of config.toml with their operators, says which this daemon
// drives, and why one that cannot start does not — never a token.
func TestAppSettingsShowsTransports(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	must(t, k.SaveSettings(&kernel.Settings{Transports: []kernel.TransportSettings{
		{Name: "slack", Channel: "C0KULE", Operators: []string{operator}, Folder: "~/notes", Agent: "peer", BotSecret: "KULE_TRANSPORT_SLACK_BOT", AppSecret: "KULE_TRANSPORT_SLACK_APP"},
		{Name: "discord", Channel: "100", Operators: []string{"200"}, BotSecret: "DISCORD_TOKEN"},
	}}))
	d := startDaemon(t, Config{Kernel: k})
	h, err := d.AttachTransport(newChat(), TransportConfig{Name: "slack", Operators: []string{operator}})
	must(t, err)
	t.Cleanup(h.Close)
	step(t, ctx, shot, "open Settings",
		chromedp.Navigate(d.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-settings`)),
		clickOf(`#btn-settings`),
		chromedp.WaitVisible(chromedp.CSS(`#settings-transports tr[data-transport="discord"]`)))
	slack := value(t, ctx, shot, "read the slack row", textOf(`#settings-transports tr[data-transport="slack"]`))
	discord := value(t, ctx, shot, "read the discord row", textOf(`#settings-transports tr[data-transport="discord"]`))
	if !strings.Contains(slack, operator) || !strings.Contains(slack, "C0KULE") || !strings.Contains(slack, "connected") || strings.Contains(slack, "not connected") {
		t.Fatalf("the slack row says %q", slack)
	}
	if !strings.Contains(discord, "not started") || !strings.Contains(discord, "KULE_TRANSPORT_") {
		t.Fatalf("the discord row says %q; want why it cannot start", discord)
	}
}
