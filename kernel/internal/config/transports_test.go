package config

import (
	"errors"
	"testing"
)

func TestTransportCheck(t *testing.T) {
	t.Parallel()
	ok := TransportConfig{Name: "slack", Channel: "C0KULE", Operators: []string{"U1"}, BotSecret: "KULE_TRANSPORT_B", AppSecret: "KULE_TRANSPORT_A"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*TransportConfig){
		"not a name":       func(c *TransportConfig) { c.Name = "../irc" },
		"upper case name":  func(c *TransportConfig) { c.Name = "IRC" },
		"no operator":      func(c *TransportConfig) { c.Operators = nil },
		"operator by name": func(c *TransportConfig) { c.Operators = []string{"@alice bob"} },
		"channel by name":  func(c *TransportConfig) { c.Channel = "#general" },
		"slack no app":     func(c *TransportConfig) { c.AppSecret = "" },
		"a task's secret":  func(c *TransportConfig) { c.BotSecret = "STRIPE_KEY" },
	} {
		c := ok
		c.Operators = append([]string(nil), ok.Operators...)
		mod(&c)
		if err := c.Check(); !errors.Is(err, ErrTransport) {
			t.Errorf("%s: Check = %v, want ErrTransport", name, err)
		}
	}
	plugin := TransportConfig{Name: "irc", Channel: "general", Operators: []string{"alice"}, BotSecret: "KULE_TRANSPORT_IRC_BOT"}
	if err := plugin.Check(); err != nil {
		t.Errorf("an installed transport's settings: %v", err)
	}
	root := t.TempDir()
	c := &Config{}
	c.SetTransport(ok)
	c.SetTransport(TransportConfig{Name: "discord", Channel: "1", Operators: []string{"2"}, BotSecret: "KULE_TRANSPORT_D"})
	ok.Folder = "~/notes"
	c.SetTransport(ok)
	if err := Save(root, c); err != nil {
		t.Fatal(err)
	}
	back, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := back.Transport("slack"); got.Folder != "~/notes" || len(back.Transports) != 2 {
		t.Fatalf("read back %+v", back.Transports)
	}
	if !back.RemoveTransport("slack") || back.RemoveTransport("slack") || len(back.Transports) != 1 {
		t.Fatalf("remove: %+v", back.Transports)
	}
}
