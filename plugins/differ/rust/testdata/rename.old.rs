/// Loads the config.
pub fn load(path: &str) -> Config {
    Config::default()
}

pub fn save(c: &Config) {
    write(c);
}

pub struct Config {
    pub port: u16,
}

impl Config {
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn host(&self) -> &str {
        "localhost"
    }
}

fn unused() {}
