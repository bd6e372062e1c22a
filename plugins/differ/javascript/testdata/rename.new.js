class Config {
  url() {
    return `https://${this.host()}`;
  }

  host() {
    return "localhost";
  }
}

function readConfig(file) {
  return JSON.parse(read(file));
}

function save(c) {
  write(c);
}

export function validate(c) {
  return c.port > 0;
}
