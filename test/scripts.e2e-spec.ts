import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import type { TestUser } from './support/fixtures';
import { fieldError, NOT_FOUND } from './support/contract-bodies';

describe('support scripts', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let base: string;
  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({ admin: { name: 'Script Author' }, product: 'p' }));
    base = `/api/orgs/${org}/products/p/scripts`;
  });
  afterAll(() => t.close());

  const create = (body: object, who = admin) => t.http().post(base).set(who.auth).send(body);

  it('creates a script: 201, Location, the spec fields exactly, created_by the caller', async () => {
    const res = await create({ name: 'reboot', text: 'Nerves.Runtime.reboot()', tags: ' a, b ,,c ' }).expect(
      201,
    );
    expect(res.body).toEqual({
      data: {
        id: expect.stringMatching(/^\d+$/),
        name: 'reboot',
        tags: 'a,b,c',
        text: 'Nerves.Runtime.reboot()',
        created_by: { id: String(admin.user.id), name: 'Script Author', email: admin.user.email },
        inserted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: expect.stringMatching(/Z$/),
      },
    });
    expect(res.headers.location).toBe(`${base}/${res.body.data.id}`);
    const shown = await t.http().get(res.headers.location).set(admin.auth).expect(200);
    expect(shown.body).toEqual(res.body);
  });

  it('tags are optional ("" when none) and may be sent as an array', async () => {
    const none = await create({ name: 'n', text: 't' }).expect(201);
    expect(none.body.data.tags).toBe('');
    const arr = await create({ name: 'n', text: 't', tags: ['x', ' y ', 'x'] }).expect(201);
    expect(arr.body.data.tags).toBe('x,y');
  });

  it('keeps the text exactly as sent (no trimming)', async () => {
    const text = '  IO.puts("hi")\n\n';
    const res = await create({ name: 'exact', text }).expect(201);
    expect(res.body.data.text).toBe(text);
  });

  it.each([
    [{}, { name: ["can't be blank"], text: ["can't be blank"] }],
    [{ name: ' ', text: 'x' }, { name: ["can't be blank"] }],
    [{ name: 'x', text: '' }, { text: ["can't be blank"] }],
    [{ name: 'x'.repeat(256), text: 'x' }, { name: ['should be at most 255 character(s)'] }],
    [
      { name: 1, text: ['x'] },
      { name: ['must be a string'], text: ['must be a string'] },
    ],
    [
      { name: 'x', text: 'x', tags: 5 },
      { tags: ['must be a comma-separated string (or an array of strings)'] },
    ],
    [
      { name: 'x', text: 'x', tags: [1] },
      { tags: ['must be a comma-separated string (or an array of strings)'] },
    ],
  ])('422 for %j', async (body, errors) => {
    const res = await create(body).expect(422);
    expect(res.body).toEqual({ errors });
  });

  it('text up to 256 KiB is accepted, one byte more is refused', async () => {
    await create({ name: 'big', text: 'a'.repeat(256 * 1024) }).expect(201);
    const res = await create({ name: 'big', text: 'a'.repeat(256 * 1024 + 1) }).expect(422);
    expect(res.body).toEqual(fieldError('text', 'should be at most 262144 byte(s)'));
  });

  it('GET by id: 404 for ids that do not exist here or are not ids', async () => {
    const other = await t.fixtures.org(admin);
    await t.fixtures.product(admin, other, 'p');
    const foreign = await t
      .http()
      .post(`/api/orgs/${other}/products/p/scripts`)
      .set(admin.auth)
      .send({ name: 'f', text: 'x' })
      .expect(201);
    for (const id of [
      foreign.body.data.id,
      'boopsnoot',
      '0',
      '-1',
      '5abc',
      '99999999999999999999999',
      '1.5',
    ]) {
      await t.http().get(`${base}/${id}`).set(admin.auth).expect(404, NOT_FOUND);
    }
  });

  it('lists with pagination, oldest first', async () => {
    await t.fixtures.product(admin, org, 'listing');
    const listBase = `/api/orgs/${org}/products/listing/scripts`;
    for (let i = 1; i <= 5; i++) {
      await t
        .http()
        .post(listBase)
        .set(admin.auth)
        .send({ name: `s${i}`, text: 'x' })
        .expect(201);
    }
    const page = await t
      .http()
      .get(`${listBase}?pagination[page]=2&pagination[page_size]=2`)
      .set(admin.auth)
      .expect(200);
    expect(page.body.data.map((s: { name: string }) => s.name)).toEqual(['s3', 's4']);
    expect(page.body.pagination).toEqual({ page_number: 2, page_size: 2, total_entries: 5, total_pages: 3 });
    const alias = await t.http().get(`${listBase}?page=3&page_size=2`).set(admin.auth).expect(200);
    expect(alias.body.data.map((s: { name: string }) => s.name)).toEqual(['s5']);
    const past = await t.http().get(`${listBase}?pagination[page]=9`).set(admin.auth).expect(200);
    expect(past.body).toEqual({
      data: [],
      pagination: { page_number: 9, page_size: 10, total_entries: 5, total_pages: 1 },
    });
    const bad = await t.http().get(`${listBase}?pagination[page_size]=501`).set(admin.auth).expect(422);
    expect(bad.body).toEqual({ errors: { 'pagination[page_size]': ['must be an integer from 1 to 500'] } });
    await t.http().get(`${listBase}?pagination[page]=0`).set(admin.auth).expect(422);
    await t.http().get(`${listBase}?pagination[page]=a&pagination[page]=b`).set(admin.auth).expect(422);
  });

  it('updates the fields sent and deletes', async () => {
    const created = await create({ name: 'edit-me', text: 'old', tags: 'a' }).expect(201);
    const url = `${base}/${created.body.data.id}`;
    const res = await t.http().put(url).set(admin.auth).send({ text: 'new', tags: 'b, c' }).expect(200);
    expect(res.body.data).toEqual(expect.objectContaining({ name: 'edit-me', text: 'new', tags: 'b,c' }));
    await t
      .http()
      .patch(url)
      .set(admin.auth)
      .send({ name: '' })
      .expect(422, fieldError('name', "can't be blank"));
    await t.http().delete(url).set(admin.auth).expect(204);
    await t.http().get(url).set(admin.auth).expect(404, NOT_FOUND);
    await t.http().delete(url).set(admin.auth).expect(404, NOT_FOUND);
  });

  it('404 for an unknown product', async () => {
    await t
      .http()
      .post(`/api/orgs/${org}/products/nope/scripts`)
      .set(admin.auth)
      .send({ name: 'x', text: 'x' })
      .expect(404, NOT_FOUND);
  });

  describe('roles', () => {
    let viewer: TestUser;
    let manager: TestUser;
    let outsider: TestUser;
    let scriptUrl: string;
    beforeAll(async () => {
      [viewer, manager, outsider] = await Promise.all([
        t.fixtures.user(),
        t.fixtures.user(),
        t.fixtures.user(),
      ]);
      await t.fixtures.addMember(org, viewer, 'view');
      await t.fixtures.addMember(org, manager, 'manage');
      const res = await create({ name: 'roles', text: 'x' }).expect(201);
      scriptUrl = res.headers.location;
    });

    it('view may read and list, not create, change or delete', async () => {
      await t.http().get(scriptUrl).set(viewer.auth).expect(200);
      await t.http().get(base).set(viewer.auth).expect(200);
      await create({ name: 'v', text: 'x' }, viewer).expect(403, NOT_FOUND);
      await t.http().put(scriptUrl).set(viewer.auth).send({ text: 'y' }).expect(403, NOT_FOUND);
      await t.http().delete(scriptUrl).set(viewer.auth).expect(403, NOT_FOUND);
    });

    it('manage may create (created_by = the manager)', async () => {
      const res = await create({ name: 'm', text: 'x' }, manager).expect(201);
      expect(res.body.data.created_by.email).toBe(manager.user.email);
    });

    it('outsiders get 404', async () => {
      await t.http().get(scriptUrl).set(outsider.auth).expect(404, NOT_FOUND);
      await create({ name: 'o', text: 'x' }, outsider).expect(404, NOT_FOUND);
    });
  });
});
