function loadConfig(file) {
  return JSON.parse(read(file));
}

function save(c) {
  write(c);
}

class Config {
  host() {
    return "localhost";
  }

  url() {
    return `http://${this.host()}`;
  }
}

function unused() {}
