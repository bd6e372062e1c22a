import json


class Config:
    port = 8080
    scheme = "https"

    def url(self):
        return f"{self.scheme}://{self.host()}:{self.port}"

    def host(self):
        return "localhost"


def read_config(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    with open(path, "w") as f:
        json.dump(data, f)
