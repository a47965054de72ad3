/* api.js -- the viewer's questions to its server: GET api/NAME?PARAMS, relative to the page, so under its token.
 *
 * Exports: api (a promise of the response; rejected with the server's message when it is not 200). */

export function api(name, params) {
  const query = new URLSearchParams(params).toString();
  return fetch("api/" + name + (query ? "?" + query : "")).then((response) => {
    if (!response.ok) return response.text().then((text) => { throw new Error(text.trim()); });
    return response;
  });
}
