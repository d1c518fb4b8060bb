import { Module } from '@nestjs/common';
import { MembershipsRepository } from './memberships.repository';
import { OrgsController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

@Module({
  controllers: [OrgsController],
  providers: [OrgsRepository, MembershipsRepository, OrgsService],
  // OrgsRepository: for `fleethub demo`, which deletes a demo it could not finish.
  exports: [OrgsService, MembershipsRepository, OrgsRepository],
})
export class OrgsModule {}
