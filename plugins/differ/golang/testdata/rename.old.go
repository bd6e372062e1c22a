package config

// LoadConfig reads the config.
func LoadConfig(path string) (*Config, error) {
	return &Config{}, nil
}

func Save(c *Config) error { return write(c) }

type Config struct {
	Port int
}

func (c *Config) Host() string { return "localhost" }

func (c *Config) URL() string { return fmt.Sprintf("http://%s:%d", c.Host(), c.Port) }

func unused() {}
