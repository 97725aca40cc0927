mod fetching;
mod http;
mod ssrf;
mod support;
