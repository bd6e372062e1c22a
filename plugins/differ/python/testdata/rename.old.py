import json


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    with open(path, "w") as f:
        json.dump(data, f)


class Config:
    port = 8080

    def host(self):
        return "localhost"

    def url(self):
        return f"http://{self.host()}:{self.port}"


def unused():
    pass
