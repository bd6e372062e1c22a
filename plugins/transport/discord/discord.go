// Package discord is Kule's Discord cockpit: a transport plugin that reads
// the configured channel, its threads, direct messages, the /kule command
// and button presses from Discord's gateway, and posts Kule's events with
// its REST API, through github.com/bwmarrin/discordgo.
//
// Threads: a task's thread is a Discord thread started from the message
// that launched it (a thread started from a message has that message's id,
// so the thread and the launch share one reference). Direct messages have
// no threads: there a reply (a message reference) to one of the task's
// messages continues it.
//
// Tokens: REST calls carry the bot token in their Authorization header,
// where the proxy puts kept secrets; the gateway carries it inside the
// identify (and resume) message of the WebSocket, so there the plugin sends
// its placeholder and only the proxy, which carries the gateway's WebSocket,
// can put the token into that one frame (see docs/transports.md for what is
// built of that).
package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"
	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/sdk/transport"
)

// Config is what the plugin needs.
type Config struct {
	// API is Discord's REST API base, ending in "/" ("" = discordgo's,
	// https://discord.com/api/v9/). The gateway's address is asked of it.
	API     string
	Token   string // the bot token (or its placeholder)
	Channel string // the channel id tasks are launched in
	Log     hclog.Logger
}

// Sentinel errors.
var (
	ErrConfig = errors.New("discord: incomplete configuration")
)

// Discord is the transport.
type Discord struct {
	cfg   Config
	s     *discordgo.Session
	inbox *transport.Inbox
	log   hclog.Logger

	mu      sync.Mutex
	threads map[string]bool   // thread channel ids of the configured channel
	dms     map[string]bool   // direct-message channel ids
	roots   map[string]string // DM message id → the message its task's thread began at
	where   map[string]string // message id → its channel, for edits
	bot     string
	conns   int
}

var _ transport.Transport = (*Discord)(nil)

var endpointsOnce sync.Once

// setEndpoints points discordgo's package-level endpoints at api. They are
// process-wide; a plugin process talks to one Discord.
func setEndpoints(api string) {
	discordgo.EndpointAPI = api
	discordgo.EndpointGuilds = api + "guilds/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = api + "webhooks/"
	discordgo.EndpointApplications = api + "applications"
}

// New makes the transport; Run connects it.
func New(cfg Config) (*Discord, error) {
	if cfg.Token == "" || cfg.Channel == "" {
		return nil, fmt.Errorf("%w: a bot token and a channel are needed (kule transport add discord)", ErrConfig)
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.API != "" {
		endpointsOnce.Do(func() { setEndpoints(cfg.API) })
	}
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	s.ShouldReconnectOnError = true
	s.ShouldRetryOnRateLimit = true
	s.SyncEvents = true // handlers in the gateway's order: what people wrote stays in order
	d := &Discord{cfg: cfg, s: s, inbox: transport.NewInbox(0), log: cfg.Log,
		threads: map[string]bool{}, dms: map[string]bool{}, roots: map[string]string{}, where: map[string]string{}}
	s.AddHandler(d.onReady)
	s.AddHandler(d.onMessage)
	s.AddHandler(d.onInteraction)
	return d, nil
}

// Connections counts the gateway sessions made (READY or RESUMED).
func (d *Discord) Connections() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns
}

// Run opens the gateway and keeps it until ctx ends; discordgo reconnects
// (resuming the session) when Discord drops the connection.
func (d *Discord) Run(ctx context.Context) error {
	d.s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) {
		d.mu.Lock()
		d.conns++
		d.mu.Unlock()
	})
	if err := d.s.Open(); err != nil {
		return fmt.Errorf("discord: open the gateway: %w", err)
	}
	<-ctx.Done()
	return d.s.Close()
}

func (d *Discord) onReady(s *discordgo.Session, r *discordgo.Ready) {
	d.mu.Lock()
	d.conns++
	if r.User != nil {
		d.bot = r.User.ID
	}
	d.mu.Unlock()
	if r.Application != nil && r.Application.ID != "" {
		_, err := s.ApplicationCommandCreate(r.Application.ID, "", &discordgo.ApplicationCommand{
			Name: "kule", Description: "Kule: status, kill, commit, rollback",
			Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "command", Description: "status, kill, commit or rollback, and a task id", Required: true}},
		})
		if err != nil {
			d.log.Warn("the /kule command was not registered", "err", err)
		}
	}
}

// threadOf says whether channel is a thread of the configured channel.
func (d *Discord) threadOf(channel string) bool {
	d.mu.Lock()
	known, ok := d.threads[channel]
	d.mu.Unlock()
	if ok {
		return known
	}
	c, err := d.s.Channel(channel)
	is := err == nil && c.IsThread() && c.ParentID == d.cfg.Channel
	if err == nil {
		d.mu.Lock()
		d.threads[channel] = is
		d.mu.Unlock()
	}
	return is
}

func (d *Discord) onMessage(_ *discordgo.Session, m *discordgo.MessageCreate) {
	d.mu.Lock()
	bot := d.bot
	d.mu.Unlock()
	if m.Author == nil || m.Author.Bot || m.Author.ID == bot {
		return
	}
	in := transport.Incoming{Author: m.Author.ID, Text: m.Content, Ref: m.ID, Channel: m.ChannelID}
	switch {
	case m.GuildID == "":
		in.Direct = true
		d.mu.Lock()
		d.dms[m.ChannelID] = true
		if r := m.MessageReference; r != nil && r.MessageID != "" {
			in.Thread = r.MessageID
			if root, ok := d.roots[r.MessageID]; ok {
				in.Thread = root
			}
			d.roots[m.ID] = in.Thread
		}
		d.mu.Unlock()
	case m.ChannelID == d.cfg.Channel:
	case d.threadOf(m.ChannelID):
		in.Thread, in.Channel = m.ChannelID, d.cfg.Channel
	default:
		return
	}
	d.inbox.Push(in)
}

func (d *Discord) onInteraction(s *discordgo.Session, i *discordgo.InteractionCreate) {
	user := ""
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User.ID
	} else if i.User != nil {
		user = i.User.ID
	}
	in := transport.Incoming{Author: user, Channel: i.ChannelID}
	if i.GuildID == "" {
		in.Direct = true
	} else if i.ChannelID != d.cfg.Channel && d.threadOf(i.ChannelID) {
		in.Thread, in.Channel = i.ChannelID, d.cfg.Channel
	}
	var resp *discordgo.InteractionResponse
	switch i.Type {
	case discordgo.InteractionMessageComponent:
		parts := strings.SplitN(i.MessageComponentData().CustomID, "|", 3)
		if len(parts) != 3 || parts[0] != "k" {
			return
		}
		in.InReplyTo, in.Choice = parts[1], parts[2]
		if i.Message != nil {
			in.Ref = i.Message.ID
			if in.Direct {
				d.mu.Lock()
				in.Thread = d.roots[i.Message.ID]
				d.mu.Unlock()
			}
		}
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	case discordgo.InteractionApplicationCommand:
		data := i.ApplicationCommandData()
		if data.Name != "kule" {
			return
		}
		text := ""
		for _, o := range data.Options {
			if o.Name == "command" {
				text = o.StringValue()
			}
		}
		verb, rest, _ := strings.Cut(strings.TrimSpace(text), " ")
		in.Command, in.Text = strings.ToLower(verb), strings.TrimSpace(rest)
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "/kule " + text, Flags: discordgo.MessageFlagsEphemeral}}
	default:
		return
	}
	d.inbox.Push(in)
	if err := s.InteractionRespond(i.Interaction, resp); err != nil {
		d.log.Warn("interaction not acknowledged", "err", err)
	}
}

// Info implements transport.Transport.
func (d *Discord) Info(context.Context) (transport.Info, error) {
	return transport.Info{Name: "discord", Capabilities: []transport.Capability{transport.CapButtons, transport.CapEdit, transport.CapFiles}}, nil
}

// Receive implements transport.Transport.
func (d *Discord) Receive(ctx context.Context, cursor string, waitMillis int64) (transport.Batch, error) {
	return d.inbox.Receive(ctx, cursor, waitMillis)
}

// Components are the buttons of a question: custom ids "k|<event>|<choice>".
func Components(ev transport.Event) []discordgo.MessageComponent {
	if ev.Question == nil || len(ev.Question.Choices) == 0 {
		return []discordgo.MessageComponent{}
	}
	var bs []discordgo.MessageComponent
	for _, c := range ev.Question.Choices {
		style := discordgo.SecondaryButton
		switch c {
		case "Approve", "Commit":
			style = discordgo.SuccessButton
		case "Deny", "Roll back", "Stop":
			style = discordgo.DangerButton
		}
		bs = append(bs, discordgo.Button{Label: c, Style: style, CustomID: "k|" + ev.ID + "|" + c})
	}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: bs}}
}

func textOf(ev transport.Event) string {
	switch {
	case ev.Notice != nil:
		return ev.Notice.Text
	case ev.Question != nil:
		return ev.Question.Text
	case ev.File != nil:
		return ev.File.Comment
	}
	return ""
}

// maxContent is Discord's limit of one message's content.
const maxContent = 2000

func clip(s string) string {
	if len(s) <= maxContent {
		return s
	}
	cut := maxContent - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Deliver implements transport.Transport.
func (d *Discord) Deliver(ctx context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	if err := ev.Check(); err != nil {
		return transport.Delivered{}, err
	}
	opt := discordgo.WithContext(ctx)
	text := clip(textOf(ev))
	channel := ev.Channel
	if channel == "" {
		channel = d.cfg.Channel
	}
	d.mu.Lock()
	dm := d.dms[channel]
	d.mu.Unlock()
	if replaces != "" {
		d.mu.Lock()
		if c, ok := d.where[replaces]; ok {
			channel = c
		}
		d.mu.Unlock()
		comps := Components(ev)
		if _, err := d.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: replaces, Channel: channel, Content: &text, Components: &comps}, opt); err != nil {
			return transport.Delivered{}, fmt.Errorf("discord: edit: %w", err)
		}
		return transport.Delivered{Ref: replaces, Thread: ev.Thread}, nil
	}
	send := &discordgo.MessageSend{Content: text, Components: Components(ev)}
	if ev.File != nil {
		send.Files = []*discordgo.File{{Name: ev.File.Name, ContentType: "text/plain", Reader: bytes.NewReader(ev.File.Content)}}
	}
	target := channel
	if ev.Thread != "" {
		if dm {
			send.Reference = &discordgo.MessageReference{MessageID: ev.Thread, ChannelID: channel}
		} else {
			target = ev.Thread
			if !d.threadOf(ev.Thread) {
				// The thread begins at the launching message: open it.
				th, err := d.s.MessageThreadStart(channel, ev.Thread, threadName(ev), 1440, opt)
				if err != nil {
					return transport.Delivered{}, fmt.Errorf("discord: open a thread: %w", err)
				}
				target = th.ID
				d.mu.Lock()
				d.threads[th.ID] = true
				d.mu.Unlock()
			}
		}
	}
	m, err := d.s.ChannelMessageSendComplex(target, send, opt)
	if err != nil {
		return transport.Delivered{}, fmt.Errorf("discord: post: %w", err)
	}
	th := ev.Thread
	if th == "" {
		th = m.ID
	}
	d.mu.Lock()
	d.where[m.ID] = target
	if dm {
		d.roots[m.ID] = th
	}
	d.mu.Unlock()
	return transport.Delivered{Ref: m.ID, Thread: th}, nil
}

func threadName(ev transport.Event) string {
	if ev.Task != "" {
		return "kule " + ev.Task
	}
	return "kule"
}
