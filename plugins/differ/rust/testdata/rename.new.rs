pub struct Config {
    pub port: u16,
    pub host: String,
}

/// Loads the config.
pub fn read_config(path: &str) -> Config {
    Config::default()
}

pub fn save(c: &Config) {
    write(c);
}

impl Config {
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn validate(&self) -> bool {
        self.port != 0
    }
}
